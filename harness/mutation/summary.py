"""The report of a run: the classification of survivors (``expectations/mutation-equivalent.yaml``) and
``summary.md``, (re-)rendered from the runs' ``mutants.jsonl`` and ``run.json``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from specconform.harness.mutation.targets import FAST_EXCLUDE

CLASSES = ("equivalent", "unreachable")


def load_classified(path: Path) -> dict[str, dict]:
    """``expectations/mutation-equivalent.yaml``: mutant key -> ``{"class", "why"}``. ``equivalent``: no
    input can tell the mutant from the original; ``unreachable``: only inputs outside the canonical interface
    (``specs/interface.py``) or another device reach the changed code, so no conformance case can."""
    if not path.exists():
        return {}
    classified = {}
    for entry in yaml.safe_load(path.read_text()) or []:
        if entry.get("class") not in CLASSES or not entry.get("why"):
            raise ValueError(f"{path}: entry {entry.get('key')!r} needs a class in {CLASSES} and a why")
        classified[entry["key"]] = {"class": entry["class"], "why": entry["why"]}
    return classified


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def summary(results: list[dict], classified: dict[str, dict], meta: dict) -> str:
    """The Markdown summary: the score, per file and operator, and every survivor with its class."""

    def kind(r):
        return "killed" if r["status"] == "KILLED" else classified.get(r["key"], {}).get("class", "gap")

    n = Counter(kind(r) for r in results)
    killed = [r for r in results if r["status"] == "KILLED"]
    non_equivalent = len(results) - n["equivalent"]
    reachable = non_equivalent - n["unreachable"]
    off_area = [r for r in killed if r["area"] and not any(q.startswith(r["area"]) for q in r["requirements"])]
    lines = [
        "# Mutation score",
        "",
        *([meta["note"], ""] if meta.get("note") else []),
        f"Judged {len(results)} mutants in {len(meta['parts'])} run(s):",
        "",
        *[f"- {part}" for part in meta["parts"]],
        "",
        "Checks: every kernel-level check except "
        + ", ".join(f"`{pattern}`" for pattern in meta.get("exclude", FAST_EXCLUDE))
        + ", each with few trials per statistical case; of them, only those that executed one of the mutant's "
        "lines when the unmutated code was judged (coverage per check; all of them when the import or the "
        "engine's factory executed it), the mutated code's area first, each group cheapest first, until the "
        "first check that is not passed. A mutant that no check executes survives unjudged.",
        "",
        f"**Score: {len(killed)} killed of {non_equivalent} non-equivalent mutants = "
        f"{100 * len(killed) / max(non_equivalent, 1):.1f} %**; of the {reachable} that a canonical case can reach: "
        f"{100 * len(killed) / max(reachable, 1):.1f} %. Survivors: {n['equivalent']} equivalent, "
        f"{n['unreachable']} unreachable through the canonical interface, {n['gap']} not classified (gaps).",
        f"Killed on a requirement outside the mutated code's area: {len(off_area)} of {len(killed)} "
        "(area by file and function: TB, RS or AC; validation.py and module-level code have none).",
        "",
        "| file | operator | mutants | killed | equivalent | unreachable | gap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple, Counter] = {}
    for r in results:
        groups.setdefault((r["path"], r["operator"]), Counter())[kind(r)] += 1
    for (path, operator), c in sorted(groups.items()):
        lines.append(
            f"| {path} | {operator} | {sum(c.values())} | {c['killed']} | {c['equivalent']} | {c['unreachable']} "
            f"| {c['gap']} |"
        )
    by_status = Counter(r["check_status"] for r in killed)
    lines += ["", "Killed by status: " + ", ".join(f"{s} {k}" for s, k in sorted(by_status.items())), ""]
    reran = [r for r in results if r.get("rerun")]
    if reran:
        lines += ["## Re-judged (after a new case, or with a longer limit per check after a TIMEOUT)", ""]
        lines += [
            f"- `{r['path']}:{r['line']}` {r['operator']} `{_short(r['original'])}` → `{r['replacement']}`: "
            + (
                f"KILLED by {r['check']} ({r['check_status']}) on {','.join(r['requirements'])}"
                if r["check"]
                else "SURVIVED"
            )
            + f" in re-run `{r['rerun']}`"
            for r in reran
        ]
        lines.append("")
    lines += ["## Survivors", ""]
    for r in results:
        if r["status"] == "KILLED":
            continue
        entry = classified.get(r["key"])
        lines.append(
            f"- `{r['path']}:{r['line']}` {r['operator']} `{_short(r['original'])}` → `{r['replacement']}` "
            f"({r['function']}): " + (f"{entry['class']}: {entry['why']}" if entry else "**not killed: a gap**")
        )
    lines += [
        "",
        "## Every mutant",
        "",
        "| file:line | function | operator | change | verdict | check (status) | requirements | checks run | s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(results, key=lambda r: (r["path"], r["line"], r["key"])):
        change = f"`{_short(r['original'], 40)}` → `{r['replacement']}`".replace("|", "\\|")
        lines.append(
            f"| {r['path']}:{r['line']} | {r['function']} | {r['operator']} | {change} | {kind(r)} "
            f"| {r['check']} ({r['check_status']}) | {', '.join(r['requirements'])} "
            f"| {r['checks_run']}/{r.get('checks_planned', '')} | {r['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def read_mutants(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "mutants.jsonl").read_text().splitlines() if line]


def _describe_run(run_dir: Path) -> str:
    """One line on a run: what it judged, how, and whether it finished (``run.json`` is written at its end)."""
    meta_path = run_dir / "run.json"
    judged = len(read_mutants(run_dir))
    if not meta_path.exists():
        return f"`{run_dir.name}`: {judged} mutants judged, then stopped (no run.json; its log is log.txt)"
    meta = json.loads(meta_path.read_text())
    baselines = ", ".join(
        f"{engine} {b['status']} in {b['seconds']:.0f} s ({len(b['checks'])} checks)"
        for engine, b in meta["baselines"].items()
    )
    return (
        f"`{run_dir.name}`: {judged} of {meta['generated']} generated mutants ({meta['sampling']}), "
        f"{meta['seconds']:.0f} s on {meta['machine']}, {meta['workers']} worker(s); limits: {meta['limits']}; "
        f"{meta['trials']} trials per statistical case; baselines (unmutated, every check, traced): {baselines}"
    )


def report(
    run_dirs: list[Path],
    classified: dict[str, dict],
    reruns: tuple[Path, ...] = (),
    out: Path | None = None,
    note: str = "",
) -> str:
    """(Re-)render the summary of one run, or of several runs over disjoint targets, from their
    ``mutants.jsonl`` and ``run.json``; the verdicts of ``reruns`` (runs of some of their mutants with
    ``--key``, after a case was added) replace the runs' own. Written to ``out`` (default: the first run's
    ``summary.md``)."""
    judged: dict[str, dict] = {}
    for run_dir in run_dirs:  # a mutant judged by two runs counts once, with its first verdict
        for entry in read_mutants(run_dir):
            judged.setdefault(entry["key"], entry)
    newer = {entry["key"]: {**entry, "rerun": rerun.name} for rerun in reruns for entry in read_mutants(rerun)}
    results = [newer.get(key, entry) for key, entry in judged.items()]
    metas = [json.loads((d / "run.json").read_text()) for d in run_dirs if (d / "run.json").exists()]
    meta = {
        "parts": [_describe_run(run_dir) for run_dir in run_dirs],
        "note": note,
        **({"exclude": metas[0]["exclude"]} if metas else {}),
    }
    text = summary(results, classified, meta)
    (out or run_dirs[0] / "summary.md").write_text(text)
    return text
