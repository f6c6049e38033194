"""A diverging thinking-budget case minimised and attributed, whichever check met it.

Every budget check that compares forced rows with the oracle's hands a diverging case here as a scenario
(``BudgetScenario``; a checked-in vector or a check's own case through ``BudgetScenario.from_vector``):

- it is shrunk (``specconform.harness.shrink`` over ``cases.budget.smaller``) while the engine diverges from the
  oracle on it *in any way*, so the failures of one defect that different checks meet shrink towards one
  minimal case rather than each staying near its own check;
- the minimal case's features are tried away by twins, and the failure goes to the requirement it isolates
  (``attributed_owner``; ``specconform.harness.checks.attribution`` says how), judged on the case alone: which
  check met it does not enter, so the checks that meet one defect name one finding (RUN-FINDING-1);
- the check records it there, and its own requirement reads BLOCKED naming the finding where the owner is another.
"""

from __future__ import annotations

from ... import shrink
from ...cases.budget import BudgetScenario, smaller, unreachable
from ...core import Tally
from .. import attribution
from .replay import BLAME_ORDER, Divergence, describe, replay_scenario, reproduction_document
from .update_order import parts_twin


def _replayed(
    engine, scenario: BudgetScenario, max_spec: int, name: str = "candidate"
) -> tuple[dict, Divergence | None]:
    """``scenario`` as a vector and the engine's first divergence on it, judged on every requirement's rows."""
    vector = scenario.vector(name, list(BLAME_ORDER))
    vector["max_spec_len"] = max_spec
    return vector, replay_scenario(engine, vector, BLAME_ORDER)


def still_diverges(engine, max_spec: int, reachable_only: bool = True):
    """A predicate: whether a candidate scenario is reachable (where ``reachable_only``: a checked-in vector may
    start from a shape the strategies never draw, drafts in a request's first step, and its candidates keep it),
    valid for the oracle, and makes ``engine`` leave the oracle's forced rows anywhere (an exception of the engine's
    on a valid candidate is no divergence the oracle can name)."""

    def diverges(candidate: BudgetScenario) -> bool:
        if reachable_only and unreachable(candidate):
            return False
        try:
            return _replayed(engine, candidate, max_spec)[1] is not None
        except ValueError:  # an update the oracle rejects: not a valid scenario
            return False
        except Exception:  # noqa: BLE001 - the engine fails otherwise on this candidate
            return False

    return diverges


def minimal_scenario(engine, scenario: BudgetScenario, max_spec: int) -> BudgetScenario:
    """``scenario`` shrunk (``cases.budget.smaller``) while ``engine`` still diverges from the oracle on it, through
    reachable candidates where ``scenario`` is reachable."""
    return shrink.minimise(scenario, smaller, still_diverges(engine, max_spec, unreachable(scenario) is None))


def attributed_owner(engine, shown: Divergence, minimal: dict) -> tuple[str, frozenset[str]]:
    """``(requirement, features)``: the requirement a failing minimal case isolates, whichever check met it, and the
    features it holds. Each feature with a twin (``attribution.TWINS``) is tried away: where the twin diverges too,
    the feature is only the stage the defect was met on. A failure that needs a batch operation and goes where each
    update's parts are applied as updates of their own (``update_order.parts_twin``) is TB-BATCH-1's, the order the
    moves' requirements build on. A misplaced marker a twin showed needed is TB-MARK-1's (the lowest requirement); a
    failure committed one token per step that the case's one-step twin does not show needs a marker split across a
    step boundary (``attribution.one_step_twin``): TB-MARK-2's; a row its own values single out is that requirement's
    (``Divergence.diagnosis``); otherwise the owner is the most specific requirement of the diverging row
    (``BLAME_ORDER``) whose feature a twin showed needed, else the most specific one whose feature the case holds or
    that has none."""
    features = attribution.case_features(minimal)
    proven = set()  # features whose twins pass: the failure needs them
    for feature in sorted(features):  # drafts first: a case whose failure does not need them is tried without them
        twins = attribution.TWINS.get(feature, lambda vector: [])(minimal)
        if not twins and feature == "misplaced-marker" and "drafts" not in features:
            twins = attribution.TWINS[feature](attribution.sequential_twin(minimal) or minimal)
        if twins and any(_diverges(engine, twin) for twin in twins):
            features -= {feature}
        elif twins:
            proven.add(feature)
    if "batch-ops" in features and _passes(engine, parts_twin(minimal)):
        return "TB-BATCH-1", features  # each move did what it should; the update's order did not
    if shown.mode == "rows-misplaced":  # the right forced tokens in the wrong rows, or two requests each wrong
        for twin in attribution.solo_twins(minimal):
            if (alone := _divergence(engine, twin)) is not None:
                return attributed_owner(engine, alone, twin)  # a request alone fails too: its own failure
        return "TB-SPEC-4", features
    if "misplaced-marker" in proven and "TB-MARK-1" in shown.row_tags:
        return "TB-MARK-1", features  # a misplaced marker stays misplaced whatever the markers' length
    one_step = attribution.one_step_twin(minimal, shown.step, shown.where[1]) if shown.where is not None else None
    if _passes(engine, one_step):
        return "TB-MARK-2", features  # the failure needs a marker split across a step boundary: the matching's
    if shown.diagnosis:
        return shown.diagnosis, features
    row = [r for r in (*BLAME_ORDER, "TB-SPEC-4", "TB-BATCH-5") if r in shown.row_tags]
    needed = [r for r in row if attribution.feature_of(r) in proven]  # a feature a twin showed needed first
    # a needed feature the diverging row no longer shows (a batch operation steps earlier): its own requirement
    needed += [_about(feature, minimal) for feature in sorted(proven) if not any(r in needed for r in row)]
    # then the case's, most specific first; zero-draft rows' layout (TB-SPEC-4) is judged by the rows' order alone,
    # and a row outside any section that is forced anyway shows a section the engine opened where none is (TB-MARK-1)
    held = [r for r in row if attribution.feature_of(r) in features | {""} and r != "TB-SPEC-4"]
    held += ["TB-MARK-1"] if "TB-MARK-1" in shown.row_tags else []
    return next(iter(needed + held), shown.requirement), features


def _about(feature: str, minimal: dict) -> str:
    """The requirement about ``feature`` a minimal case that needs it isolates where its diverging row names none:
    for batch operations, by the moves the case holds (a SWAP, else a move onto a slot, else the update's order)."""
    if feature == "batch-ops":
        kinds = {kind for step in minimal["steps"] if step["update"] for _, _, kind in step["update"]["moved"]}
        return "TB-BATCH-3" if "SWAP" in kinds else "TB-BATCH-2" if "UNIDIRECTIONAL" in kinds else "TB-BATCH-1"
    return next(r for r in (*BLAME_ORDER, "TB-BATCH-5") if attribution.feature_of(r) == feature)


def _passes(engine, vector: dict | None) -> bool:
    """Whether ``engine`` replays ``vector`` (a twin; None: none could be built) to its end beside the oracle: an
    exception of the engine's is no pass (an engine without drafts cannot show that a twin with drafts passes)."""
    if vector is None:
        return False
    try:
        return replay_scenario(engine, vector, tuple(BLAME_ORDER)) is None
    except Exception:  # noqa: BLE001 - the engine cannot run the twin: it shows nothing
        return False


def _diverges(engine, vector: dict) -> bool:
    return _divergence(engine, vector) is not None


def _divergence(engine, vector: dict) -> Divergence | None:
    try:
        return replay_scenario(engine, vector, tuple(BLAME_ORDER))
    except Exception:  # noqa: BLE001 - the engine fails the twin another way: it does not show the same defect
        return None


def judge_scenario(
    engine, profile, tally: Tally, requirements: tuple[str, ...], scenario: BudgetScenario, max_spec: int, label: str
) -> str | None:
    """Replay ``scenario`` beside the oracle, each compared row counting for the check's requirements it exercises;
    where the engine diverges, the failure is minimised, attributed and recorded (``record_divergence``). The
    finding recorded, or None."""
    vector = scenario.vector(label.replace(" ", "-"), list(requirements))
    vector["max_spec_len"] = max_spec
    divergence = replay_scenario(engine, vector, requirements, tally)
    if divergence is None:
        return None
    return record_divergence(engine, profile, tally, requirements, scenario, vector, divergence, label)


def record_divergence(
    engine,
    profile,
    tally: Tally,
    requirements: tuple[str, ...],
    scenario: BudgetScenario,
    vector: dict,
    divergence: Divergence,
    label: str,
) -> str | None:
    """``scenario`` (``vector``, on which the engine met ``divergence``) minimised while the engine diverges in any
    way, its minimal case attributed and recorded in ``tally`` (``record_attributed``); the finding recorded."""
    max_spec = vector["max_spec_len"]
    minimal = minimal_scenario(engine, scenario, max_spec)
    reduced, shown = _replayed(engine, minimal, max_spec, f"minimal-{label.replace(' ', '-')}")
    reduced["requirements"] = list(requirements)
    reduced["description"] = f"minimised from {label}"
    if shown is None:  # the engine is not deterministic: keep the case as met
        reduced, shown, minimal = vector, divergence, scenario
    else:
        shown = replay_scenario(engine, reduced, requirements) or shown  # blamed within the check's requirements
    evidence = f"{label} (size {scenario.size}, minimised to {minimal.size}): {describe(reduced, shown)}"
    document = reproduction_document(reduced, shown, vector, scenario.size, minimal.size)
    return record_attributed(engine, profile, tally, requirements, shown, reduced, evidence, document)


def record_attributed(
    engine,
    profile,
    tally: Tally,
    requirements: tuple[str, ...],
    shown: Divergence,
    minimal: dict,
    evidence: str,
    document: dict,
) -> str | None:
    """Record the minimal case's failure under the requirement it isolates (``attributed_owner``): the check's own
    requirement when the case holds its feature, else the owner, and the requirement the check blamed reads
    BLOCKED. An owner of a class ``profile`` (the run's) does not claim is no failure: the case lies outside the
    engine's claims (None is returned). The finding recorded otherwise."""
    owner, features = attributed_owner(engine, shown, minimal)
    outside = attribution.unclaimed(profile, owner)
    if outside:  # no failure of this engine's: what the case shows belongs to a class it does not claim
        tally.not_applicable(outside, shown.requirement)
        return None
    if owner == "TB-SPEC-2" and shown.where and -1 in (shown.got[shown.where[2]], shown.expected[shown.where[2]]):
        owner = "TB-SPEC-1"  # forced against free: which state the row was judged on, as the blame rule says
    finding = attribution.finding_key(owner, features)
    document = {**document, "fingerprint": f"{owner}/{shown.mode}", "finding": finding}
    if owner != shown.requirement:  # the reproduction blames the owner, as the record does, when replayed
        document["scenarios"] = [{**scenario, "requirements": [owner]} for scenario in document["scenarios"]]
        if shown.requirement in tally.cases:  # the check's own requirement cannot be certified past this case
            tally.blocked(shown.requirement, finding, f"its minimal case fails {owner} ({shown.mode})")
    tally.violated(owner, shown.mode, evidence, reproduction=document, finding=finding)
    return finding
