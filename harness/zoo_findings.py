"""The zoo judged as a new user's first run: one bug, one finding, under the requirement it breaks.

``specconform zoo`` judges each mutant by the few checks that can show its bug, with their verdicts on the
requirement it breaks. A user's first run knows nothing of the bug: it runs every kernel check of the family the
engine implements, with no expectations file, and reads the findings the report groups. This module judges each
mutant that way, each in its own engine process (``isolation.EngineProcess``), and says per mutant whether the harness
caught it, how many findings it reported, and whether the first one is under the requirement the mutant declares
(``Mutant.breaks``) or the lower one its entry says its minimal case isolates (``Mutant.found_under``). A mutant the
report shows as more than one finding, or under another requirement, sends its reader after the wrong cause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import checks as checks_module
from . import findings, runner, spec
from .adapters import zoo
from .config import RunConfig, select
from .core import Check
from .isolation import EngineProcess

# The family of a requirement, by its id's prefix: the check classes an adapter of that kernel claims.
FAMILY_CLASSES = {"TB-": "tb.", "RS-": "rs.", "AC-": "ac."}

# The calibrated statistical checks: sized by the declared deviation, each takes minutes at a first run's trials.
# A mutant outside the sampler is judged without them (the exact checks and the reference draws show its bug), but
# for those its entry names as the only ones that can show it (``Mutant.shown_by``).
STATISTICAL_CHECKS = frozenset(
    {"rejection/distribution", "rejection/distribution-one-hot", "rejection/acceptance-rule", "rejection/mixed-seeding"}
    | {
        f"vectors/rejection/{entry['name']}"
        for group in ("distributions", "sampled_drafts")
        for entry in spec.load_vectors("rejection")[group]
    }
)

FIRST_RUN = (
    "every kernel check of the classes of the family of the requirement the mutant breaks (tb.*, rs.* or ac.*) that "
    "its profile claims, the calibrated statistical checks only for the sampler's mutants and where a mutant's "
    "shown_by names them."
)


def family_prefix(mutant: zoo.Mutant) -> str:
    """The class prefix of the kernel whose requirement ``mutant`` breaks (``tb.``, ``rs.`` or ``ac.``)."""
    return next(prefix for rid, prefix in FAMILY_CLASSES.items() if mutant.breaks.startswith(rid))


def first_run_checks(mutant: zoo.Mutant, catalogue: Iterable[Check] | None = None) -> list[Check]:
    """The kernel checks a first run of ``mutant``'s family selects, in run order: every check of the family's classes
    (the engine's profile claims what it claims; the runner records the rest NOT_CLAIMED), without the statistical
    ones for a mutant outside the sampler unless its ``shown_by`` names them."""
    prefix = family_prefix(mutant)
    sampler = mutant in zoo.SAMPLER_MUTANTS
    catalogue = checks_module.kernel_checks() if catalogue is None else list(catalogue)
    shown_by = {check.name for check in select(catalogue, mutant.shown_by)} if mutant.shown_by else set()
    return [
        check
        for check in catalogue
        if check.cls.startswith(prefix) and (sampler or check.name not in STATISTICAL_CHECKS or check.name in shown_by)
    ]


def finding_requirement(finding: findings.Finding) -> str:
    """The requirement a finding is reported under: the one its name starts with (what its minimal case isolates)."""
    return finding.name.split(" ", 1)[0]


@dataclass
class MutantFindings:
    """What a first run reported for one mutant: its findings in report order, and the checks that ended in ERROR
    or TIMEOUT (no finding, but no verdict either)."""

    mutant: zoo.Mutant
    found: list[findings.Finding]
    broken_checks: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def caught(self) -> bool:
        return bool(self.found)

    @property
    def expected_requirements(self) -> tuple[str, ...]:
        """The requirements its one finding may be under: the declared one, or the lower one its entry names."""
        return (self.mutant.breaks,) + ((self.mutant.found_under,) if self.mutant.found_under else ())

    @property
    def first_requirement(self) -> str:
        return finding_requirement(self.found[0]) if self.found else ""

    @property
    def one_finding_where_declared(self) -> bool:
        """Issue 37's criterion: exactly one finding, under the declared requirement or its ``found_under``."""
        return len(self.found) == 1 and self.first_requirement in self.expected_requirements


def judge_mutant(mutant: zoo.Mutant, config: RunConfig, selected: list[Check] | None = None) -> MutantFindings:
    """Run ``selected`` (default: ``first_run_checks``) against ``mutant`` in its own engine process, with no
    expectations, and group the records into findings as every report does."""
    started = time.perf_counter()
    engine = EngineProcess(f"zoo:{mutant.name}")
    try:
        records = runner.run_checks(
            engine,
            first_run_checks(mutant) if selected is None else selected,
            config.context,
            timeout_s=config.timeout,
        )
    finally:
        engine.stop()
    return MutantFindings(
        mutant,
        findings.findings(records),
        broken_checks=[r.check for r in records if r.status in ("ERROR", "TIMEOUT")],
        seconds=time.perf_counter() - started,
    )


def judge_zoo(
    mutants: Iterable[zoo.Mutant],
    config: RunConfig,
    on_mutant: Callable[[int, int, MutantFindings], None] = lambda done, total, judged: None,
    selected_for: Callable[[zoo.Mutant], list[Check] | None] = lambda mutant: None,
) -> list[MutantFindings]:
    """``judge_mutant`` for each of ``mutants``, one after the other; ``on_mutant(done, total, judged)`` after each."""
    mutants = list(mutants)
    judged = []
    for done, mutant in enumerate(mutants, 1):
        judged.append(judge_mutant(mutant, config, selected_for(mutant)))
        on_mutant(done, len(mutants), judged[-1])
    return judged


def progress_line(done: int, total: int, judged: MutantFindings) -> str:
    """``[done/total] mutant: N findings, first under REQ (expected ...) (seconds)``."""
    verdict = "ok" if judged.one_finding_where_declared else "MISMATCH" if judged.caught else "NOT CAUGHT"
    first = f", first under {judged.first_requirement}" if judged.caught else ""
    return (
        f"[{done}/{total}] {verdict:10} {judged.mutant.name}: {len(judged.found)} findings{first} "
        f"(expected {' or '.join(judged.expected_requirements)}) ({judged.seconds:.1f} s)"
    )


def render_markdown(judged: list[MutantFindings], how: str) -> str:
    """The table (one row per mutant), a count of mutants meeting the criterion, the seconds per family, and each
    mismatching mutant's findings; ``how`` says what was run."""
    met = sum(j.one_finding_where_declared for j in judged)
    lines = [
        "# The zoo as a first run: one bug, one finding",
        "",
        f"{how}",
        "",
        f"{met} of {len(judged)} mutants give exactly one finding under the requirement they declare "
        f"(or the one their entry says it builds on); {sum(j.caught for j in judged)} caught.",
        "",
        "| mutant | caught | findings | first finding | its requirement | declared | found under | match | "
        "ERROR/TIMEOUT checks | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for j in judged:
        first = j.found[0].name.replace("|", "/") if j.found else "—"
        lines.append(
            f"| {j.mutant.name} | {'yes' if j.caught else 'NO'} | {len(j.found)} | {first} | "
            f"{j.first_requirement or '—'} | {j.mutant.breaks} | {j.mutant.found_under or '—'} | "
            f"{'yes' if j.one_finding_where_declared else 'NO'} | {len(j.broken_checks)} | {j.seconds:.1f} |"
        )
    families: dict[str, list[MutantFindings]] = {}
    for j in judged:
        families.setdefault(family_prefix(j.mutant), []).append(j)
    lines += ["", "| family | mutants | match | seconds | mean seconds per mutant |", "| --- | --- | --- | --- | --- |"]
    for prefix, members in families.items():
        seconds = sum(j.seconds for j in members)
        lines.append(
            f"| {prefix}* | {len(members)} | {sum(j.one_finding_where_declared for j in members)} | "
            f"{seconds:.0f} | {seconds / len(members):.1f} |"
        )
    mismatched = [j for j in judged if not j.one_finding_where_declared]
    if mismatched:
        lines += ["", "## Findings of the mutants that do not match", ""]
        for j in mismatched:
            named = "; ".join(f"{f.name} (first seen by `{f.first[0].check}`)" for f in j.found) or "none"
            broken = f" ERROR/TIMEOUT: {', '.join(j.broken_checks)}." if j.broken_checks else ""
            lines.append(f"- **{j.mutant.name}** (declares {j.mutant.breaks}): {named}.{broken}")
    return "\n".join(lines) + "\n"


def write_report(judged: list[MutantFindings], how: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(judged, how))
    return path
