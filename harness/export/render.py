"""The exported file's text: a docstring that says what the finding is and how to run the test, the idiom's imports
and driver, each case as a literal constant, and one test function per case.

Literals are Python source written as a formatter would (inline where they fit, else one item per line), infinite
and NaN floats as ``float("-inf")``, so that the file imports as written. Everything the test needs is in the file;
only the engine (and torch/numpy) is imported.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from types import ModuleType

from .budget import REPLAY, BudgetCase
from .rejection import CHECK, RejectionCase

WIDTH = 120


def _scalar(value) -> str:
    """A scalar as Python source: strings double-quoted, non-finite floats as ``float("-inf")``."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def _source(value, indent: int, used: int) -> str:
    """``value`` (JSON-like: dicts, lists, scalars) as Python source on a line indented ``indent`` columns whose first
    ``used`` columns are taken: inline where it fits in ``WIDTH`` columns, else one item per line, as a formatter
    would write it."""
    if isinstance(value, dict):
        keys = [f"{json.dumps(key)}: " for key in value]
        items = [key + _source(item, indent + 4, indent + 4 + len(key)) for key, item in zip(keys, value.values())]
        opening, closing = "{", "}"
    elif isinstance(value, list | tuple):
        items = [_source(item, indent + 4, indent + 4) for item in value]
        opening, closing = "[", "]"
    else:
        return _scalar(value)
    inline = opening + ", ".join(items) + closing
    if used + len(inline) < WIDTH and "\n" not in inline:
        return inline
    pad = " " * (indent + 4)
    return opening + "\n" + "".join(f"{pad}{item},\n" for item in items) + " " * indent + closing


def literal(name: str, value) -> str:
    """``NAME = <value as Python source>``."""
    return f"{name} = {_source(value, 0, len(name) + 3)}\n"


def slug(text: str) -> str:
    """A Python identifier from a case name (``minimal-scenario-8`` -> ``minimal_scenario_8``)."""
    name = re.sub(r"\W+", "_", text).strip("_").lower() or "case"
    return name if not name[0].isdigit() else f"case_{name}"


def _comment(case: BudgetCase | RejectionCase) -> str:
    """The case's name, description and requirements as a comment above its literal."""
    text = f"{case.name}: {case.description} ({', '.join(case.requirements)})" if case.description else case.name
    return textwrap.fill(text, WIDTH, initial_indent="# ", subsequent_indent="# ") + "\n"


def _header(idiom: ModuleType, finding: dict, source: str, expected: str) -> str:
    """The module docstring: the finding, what is expected, how to run it, where it came from."""
    what = finding.get("requirement") or ", ".join(finding.get("requirements", ())) or "a requirement"
    lines = [textwrap.fill(f"Regression test for {idiom.LABEL}: {what}.", WIDTH - 4), ""]
    if finding.get("finding"):
        lines.append(f"Finding: {finding['finding']}, recorded by {finding.get('check', 'its check')}.")
    lines += [
        expected,
        "An engine that meets the specification passes it; the engine the finding was recorded on failed it"
        + (f"\n({finding['fingerprint']})." if finding.get("fingerprint") else "."),
        "",
        f"Run: {idiom.RUN}.",
        "Exported by `specconform export --pytest` (the expected values are the specification's oracle's; nothing of",
        "specconform's harness is imported) from",
        source,
    ]
    return '"""' + "\n".join(lines) + '\n"""\n\nfrom __future__ import annotations\n\n'


def render_budget(idiom: ModuleType, cases: list[BudgetCase], finding: dict, source: str) -> str:
    """A pytest module with one test per scenario, driven by ``idiom``'s ``EngineBudget``."""
    expected = (
        "Each case steps the engine through a batch of requests: per step, the batch update, the drafts per slot and\n"
        "the tokens each slot commits. EXPECTED_FORCED holds the forced token of every logits row per step as the\n"
        "specification computes it (-1: a free row; None: a row after a rejected draft, not judged)."
    )
    parts = [_header(idiom, finding, source, expected), idiom.BUDGET_IMPORTS]
    for number, case in enumerate(cases, 1):
        comment = _comment(case)
        value = {
            "start_token_ids": case.start_token_ids,
            "end_token_ids": case.end_token_ids,
            "scope": case.scope,
            "max_num_reqs": case.max_num_reqs,
            "max_spec_len": case.max_spec_len,
            "steps": case.steps,
            "expected_forced": case.expected,
        }
        parts += ["\n", comment, literal(f"CASE_{number}", value)]
    parts += ["\n", idiom.BUDGET_DRIVER, "\n", REPLAY]
    for number, case in enumerate(cases, 1):
        parts.append(f"\n\ndef test_{slug(case.name)}():\n    replay(CASE_{number})\n")
    return "".join(parts)


def render_rejection(idiom: ModuleType, cases: list[RejectionCase], finding: dict, source: str) -> str:
    """A pytest module with one test per exact case, run by ``idiom``'s ``engine_rejection_sample``."""
    expected = (
        "Each case is one verification batch in the canonical layout (target logits, drafts, temperatures, seeds,\n"
        "positions, forced rows). expected_token_ids and expected_num_emitted are what the specification emits for it\n"
        "under its counter-based draws keyed by (seed, position)."
    )
    parts = [_header(idiom, finding, source, expected), idiom.REJECTION_IMPORTS]
    for number, case in enumerate(cases, 1):
        comment = _comment(case)
        value = {
            **case.case,
            "expected_token_ids": case.expected_token_ids,
            "expected_num_emitted": case.expected_num_emitted,
        }
        parts += ["\n", comment, literal(f"CASE_{number}", value)]
    parts += ["\n", idiom.REJECTION_DRIVER, "\n", CHECK]
    for number, case in enumerate(cases, 1):
        parts.append(f"\n\ndef test_{slug(case.name)}():\n    check(CASE_{number})\n")
    return "".join(parts)
