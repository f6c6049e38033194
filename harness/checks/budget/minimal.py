"""A failing thinking-budget scenario minimised and attributed: shrunk (``specconform.harness.shrink`` over
``cases.budget.smaller``) while the engine still fails it on the same fingerprint, and recorded under the
requirement its minimal case isolates (``attributed_owner``; ``specconform.harness.checks.attribution`` says how)."""

from __future__ import annotations

from ... import shrink
from ...cases.budget import BudgetScenario, smaller, unreachable
from ...core import Tally
from .. import attribution
from .replay import BLAME_ORDER, Divergence, replay_scenario


def fails_the_same(engine, fingerprint: str, requirements: tuple[str, ...], max_spec: int):
    """A predicate: whether a candidate scenario is reachable, valid for the oracle, and makes ``engine``
    diverge with ``fingerprint`` (another failure met on the way does not count)."""

    def still_fails(candidate: BudgetScenario) -> bool:
        if unreachable(candidate):
            return False
        try:
            vector = candidate.vector("candidate", list(requirements))
        except ValueError:  # an update the oracle rejects: not a valid scenario
            return False
        vector["max_spec_len"] = max_spec
        try:
            found = replay_scenario(engine, vector, requirements)
        except Exception:  # the engine fails otherwise on this candidate: not the same failure
            return False
        return found is not None and found.fingerprint == fingerprint

    return still_fails


def minimal_scenario(engine, scenario: BudgetScenario, fingerprint: str, requirements, max_spec) -> BudgetScenario:
    """``scenario`` shrunk (``cases.budget.smaller``) while ``engine`` still fails it with ``fingerprint``."""
    return shrink.minimise(scenario, smaller, fails_the_same(engine, fingerprint, tuple(requirements), max_spec))


def attributed_owner(
    engine, requirements: tuple[str, ...], shown: Divergence, minimal: dict
) -> tuple[str, frozenset[str]]:
    """``(requirement, features)``: the requirement a failing minimal case of a check of ``requirements``
    isolates, and the features it holds (``specconform.harness.checks.attribution`` says how)."""
    features = attribution.case_features(minimal)
    own = {attribution.feature_of(r) for r in requirements} - {"", "misplaced-marker"}
    proven = set()  # features whose twins pass: the failure needs them
    for feature in sorted(features):
        twins = attribution.TWINS.get(feature, lambda vector: [])(minimal)
        if twins and any(_diverges(engine, twin) for twin in twins):
            features -= {feature}
        elif twins:
            proven.add(feature)
    needed = own & features
    if "misplaced-marker" in features and "TB-MARK-1" in shown.row_tags and needed <= {"multi-token-markers"}:
        return "TB-MARK-1", features  # a misplaced marker stays misplaced whatever the markers' length
    if not needed or shown.requirement not in shown.row_tags:  # a check of the basic machinery included
        return attribution.owner(shown.row_tags, BLAME_ORDER, features) or shown.requirement, features
    # the check's own feature is needed: a twin without it passes, so the most specific of the row's requirements
    # about it; where no twin could show it, the check's blame stands
    about = [
        r for r in (*BLAME_ORDER, "TB-BATCH-5") if r in shown.row_tags and attribution.feature_of(r) in proven & own
    ]
    return next(iter(about), shown.requirement), features


def _diverges(engine, vector: dict) -> bool:
    try:
        return replay_scenario(engine, vector, tuple(BLAME_ORDER)) is not None
    except Exception:  # noqa: BLE001 - the engine fails the twin another way: it does not show the same defect
        return False


def _record_attributed(
    engine,
    profile,
    tally: Tally,
    requirements: tuple[str, ...],
    shown: Divergence,
    minimal: dict,
    evidence: str,
    document: dict,
) -> None:
    """Record the minimal case's failure under the requirement it isolates (``attributed_owner``): the check's own
    requirement when the case holds its feature, else the owner, and the check's requirement reads BLOCKED. An owner
    of a class ``profile`` (the run's) does not claim is no failure: the case lies outside the engine's claims."""
    owner, features = attributed_owner(engine, requirements, shown, minimal)
    outside = attribution.unclaimed(profile, owner)
    if outside:  # no failure of this engine's: what the case shows belongs to a class it does not claim
        tally.not_applicable(outside, shown.requirement)
        return
    if owner == "TB-SPEC-2" and -1 in (shown.got[shown.where[2]], shown.expected[shown.where[2]]):
        owner = "TB-SPEC-1"  # forced against free: which state the row was judged on, as the blame rule says
    finding = attribution.finding_key(owner, features)
    document = {**document, "fingerprint": f"{owner}/{shown.mode}", "finding": finding}
    if owner != shown.requirement:  # the reproduction blames the owner, as the record does, when replayed
        document["scenarios"] = [{**scenario, "requirements": [owner]} for scenario in document["scenarios"]]
    if owner not in requirements:  # a requirement of another check: this check's own one cannot be certified
        tally.blocked(shown.requirement, finding, f"its minimal case fails {owner} ({shown.mode})")
    tally.violated(owner, shown.mode, evidence, reproduction=document, finding=finding)
