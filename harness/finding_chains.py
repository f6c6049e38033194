"""Statistical failures merged along the order of the requirements (RUN-FINDING-2).

An exact failure is shrunk to a minimal case, and the failures of checks whose minimal cases coincide are one
finding (``findings``). A statistical failure has no minimal case: a test of many trials deviated, and which rule of
the sampler made it deviate is not in the counts. Left alone, one defect of a sampler reads as one finding per test it
moves: the acceptance rate (RS-PROB-1), the token on rejection (RS-PROB-2), the distribution of every position
(RS-PROB-5), the accepted length (RS-PROB-6). So, per engine:

- Of two findings at least one of which a statistical test saw, the one whose requirement builds on the other's
  (``requirement_order.below``) is merged into the other: the higher requirement cannot be told apart from the lower
  one it assumes while that one fails. Of several such lower findings it joins the lowest
  (``requirement_order.sort_key``); each finding joins at most one, so a higher finding never joins two unrelated
  lower ones into one.
- Two exact findings are never merged by this rule: their minimal cases already told them apart (RUN-FINDING-1).
- A golden vector's emitted-row test judges every requirement the vector lists at once (the acceptance and the
  token on rejection of one row), so a finding that only such tests saw names none of them: it joins the finding of
  a requirement on one chain of ``builds_on`` with one the vector lists, where there is one.
- A finding whose failures a published proof patch groups (``Finding.defect`` a patch) keeps that grouping.

Failures of requirements on no common chain stay apart, whatever tests saw them: two defects stay two findings.
The merged finding keeps every check and requirement that saw it (``Finding.also`` names the other requirements).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from . import requirement_order

if TYPE_CHECKING:
    from .findings import Finding

# The failure modes (the part of a fingerprint after "/") that statistical tests record: the acceptance rate and the
# token on rejection of a fixed-draft case (rejection/acceptance-rule), a golden vector's emitted row, the positions
# and the accepted length of a distribution case, unseeded rows beside seeded ones (rejection/mixed-seeding).
STATISTICAL_MODES = frozenset(
    {
        "acceptance-rate",
        "rejection-token",
        "emitted-row-distribution",
        "position-distribution",
        "accepted-length-law",
        "unseeded-rows-off-distribution",
    }
)
# The modes of tests that judge every requirement their golden vector lists at once.
JOINT_MODES = frozenset({"emitted-row-distribution"})


def _modes(finding: Finding) -> set[str]:
    return {record.results[rid].fingerprint.partition("/")[2] for record, rid in finding.records}


def statistical(finding: Finding) -> bool:
    """Whether a statistical test saw the finding (one of its failures has a statistical mode)."""
    return bool(_modes(finding) & STATISTICAL_MODES)


def joint(finding: Finding) -> bool:
    """Whether only tests that judge several requirements at once saw it (nothing singles its requirement out)."""
    modes = _modes(finding)
    return bool(modes) and modes <= JOINT_MODES


def requirement_of(finding: Finding) -> str:
    """The requirement a finding is named by (its name's first word)."""
    return finding.name.split(" ", 1)[0]


def _proven(finding: Finding) -> bool:
    """Whether a published proof patch groups its failures (its defect is a patch, not its name)."""
    return any(
        record.results[rid].expectation_proof or record.results[rid].expectation_defects
        for record, rid in finding.records
    )


def _on_one_chain(a: str, b: str) -> bool:
    return a == b or a in requirement_order.below(b) or b in requirement_order.below(a)


def _lowest(candidates: Iterable[Finding]) -> Finding | None:
    return min(candidates, key=lambda f: requirement_order.sort_key(requirement_of(f)), default=None)


def merge(found: list[Finding]) -> list[Finding]:
    """``found`` with each statistical finding merged into the one it belongs to (see the module's text); the
    others as they were, in their order."""
    into: dict[int, Finding] = {}  # id of a finding -> the finding it joins (directly)
    for engine in dict.fromkeys(f.engine for f in found):
        own = [f for f in found if f.engine == engine and not _proven(f)]
        naming = [f for f in own if not joint(f)]
        for finding in naming:
            rid = requirement_of(finding)
            lower = [
                other
                for other in naming
                if other is not finding
                and requirement_of(other) in requirement_order.below(rid)
                and (statistical(finding) or statistical(other))
            ]
            if target := _lowest(lower):
                into[id(finding)] = target
        groups: dict[int, list[str]] = {}  # id of a root -> the requirements of the findings it gathers
        for finding in naming:
            groups.setdefault(id(_root(finding, into)), []).append(requirement_of(finding))
        roots = [f for f in naming if id(f) not in into]
        for finding in own:
            if joint(finding):  # the requirements its golden vectors list, any of which it may be a failure of
                listed = {rid for record, _ in finding.records for rid in record.requirements}
                related = [r for r in roots if any(_on_one_chain(a, b) for a in listed for b in groups[id(r)])]
                if target := _lowest(related):
                    into[id(finding)] = target
    for finding in found:
        if id(finding) in into:
            _absorb(_root(finding, into), finding)
    kept = [f for f in found if id(f) not in into]
    for finding in kept:  # shown first: a failure of its own requirement by a test that singles it out
        finding.records.sort(key=lambda sighting: _shown_after(finding, *sighting))
    return kept


def _shown_after(finding: Finding, record, rid: str) -> tuple[bool, bool]:
    """Sort key of a sighting: those of the finding's own requirement first, then those a test of that requirement
    alone saw (not a golden vector's emitted row)."""
    mode = record.results[rid].fingerprint.partition("/")[2]
    return rid != requirement_of(finding), mode in JOINT_MODES


def _root(finding: Finding, into: dict[int, Finding]) -> Finding:
    while id(finding) in into:
        finding = into[id(finding)]
    return finding


def _absorb(target: Finding, finding: Finding) -> None:
    """``finding``'s sightings, checks and what it blocked, kept under ``target``; its name said beside it."""
    target.checks += finding.checks
    target.records += finding.records
    target.blocked += finding.blocked
    for name in (finding.name, *finding.also):
        if name != target.name and name not in target.also:
            target.also.append(name)
