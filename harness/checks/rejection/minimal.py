"""A failing rejection case minimised and attributed (RUN-FINDING-1): shrunk (``specconform.harness.shrink`` over
``cases.rejection.smaller_cases``) while the engine still diverges from the oracle on it in any way (so that the
failures one bug causes in different checks reach the same minimal case), then judged alone
(``oracle.rejection_judge.violations``) and recorded under the lowest requirement it violates. Where that is not one
of the check's own requirements, the check's requirement reads BLOCKED, naming the finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ... import shrink, vectors
from ...cases.rejection import case_size, reordered, smaller_cases
from ...core import Tally
from ...oracle import rejection as rs
from ...oracle import rejection_judge as rj
from .. import attribution
from .output import outside_contract, sample_output


def has_tie(logits: np.ndarray) -> bool:
    finite = np.where(np.isneginf(logits), -np.inf, logits)
    return bool(((finite == finite.max(axis=-1, keepdims=True)).sum(axis=-1) > 1).any())


def comparable(case: rs.RejectionCase, tie_break: str) -> bool:
    """False for a case within 1e-5 of a floating-point decision (RS-RNG-3) of a request compared exactly (an
    unseeded request's fresh draws decide nothing that is compared), or with a tie that the profile lets the engine
    break either way."""
    _, _, traces = rs.sample_case(case)
    traces = [t for i, t in enumerate(traces) if rj.compared(case, i)]
    if any(min(t.accept_margins, default=np.inf) < 1e-5 or t.sample_margin < 1e-5 for t in traces):
        return False
    return not (tie_break == "any" and has_tie(case.target_logits))


def judge(
    engine, profile, case: rs.RejectionCase, compare, tie_break: str, batch_needed: bool = False, misread: bool = True
):
    """Every violation of ``engine``'s output for ``case`` (``rj.violations``; a valid case rejected is one)."""
    try:
        tokens, num = sample_output(engine, profile, case) if profile is not None else engine.rejection_sample(case)
    except (ValueError, rs.InvalidCase) as exc:
        return [rj.rejected(case, exc)]
    return rj.violations(case, tokens, num, compare, tie_break, batch_needed, misread)


# modes of a misreading the oracle reproduced (RS-RNG-2, RS-ONEHOT-2), and the other seeds it must hold on
# it must part from the oracle the same way on CONFIRMED of them at least, and on none otherwise
MISREADINGS, RESEEDED, CONFIRMED = ("acceptance-draw-reused", "draft-probs-misaligned"), 16, 2


def _reseeded(case: rs.RejectionCase, k: int) -> rs.RejectionCase:
    return replace(case, seeds=(np.asarray(case.seeds) + k) % 2**62)


def needs_batch(case: rs.RejectionCase, diverges: Callable[[rs.RejectionCase], bool]) -> bool:
    """Whether ``case`` holds several requests and each alone ``diverges`` not: its failure needs the batch."""
    alone = [reordered(case, [i]) for i in range(case.batch_size)] if case.batch_size > 1 else []
    return bool(alone) and not any(diverges(one) for one in alone)


def judge_alone(engine, profile, case: rs.RejectionCase, compare: bool, tie_break: str) -> list[rj.Violation]:
    """``case`` judged as ``attribute`` judges a minimal case: as a batch failure where each request alone replays
    (``specconform replay`` of a reproduction judges its minimal case so, and names the same owner)."""
    found = judge(engine, profile, case, compare, tie_break)
    diverges = _diverges(engine, profile, compare, tie_break, lambda candidate: True)
    if found and needs_batch(case, diverges):
        found = judge(engine, profile, case, compare, tie_break, batch_needed=True)
        return _two_rules(engine, profile, case, found, compare, tie_break, diverges)[1]
    return _general_rule(
        engine, profile, case, settled(engine, profile, case, found, compare, tie_break), compare, tie_break
    )


@dataclass
class Attributed:
    """A failing case minimised: the minimal case, its violations judged alone, and the one it belongs to."""

    minimal: rs.RejectionCase
    found: list[rj.Violation]
    owner: rj.Violation


def _diverges(engine, profile, compare: bool | str, tie_break: str, usable: Callable[[rs.RejectionCase], bool]):
    def still_diverges(candidate: rs.RejectionCase) -> bool:
        try:
            candidate.validate()
            if not usable(candidate):
                return False
            return bool(judge(engine, profile, candidate, compare, tie_break))
        except Exception:  # noqa: BLE001 - invalid, or the engine fails otherwise: not a divergence to follow
            return False

    return still_diverges


def settled(engine, profile, case: rs.RejectionCase, found, compare, tie_break: str, batch_needed: bool = False):
    """``found`` (the violations of ``case``), where its owner is a misreading the oracle reproduced, kept only if the
    misreading holds on other seeds of ``case`` too (``RESEEDED``, ``CONFIRMED``); else it may have held by chance, and
    ``case`` is judged without it."""
    owner = rj.owner(found)
    if owner is None or owner.mode not in MISREADINGS:
        return found
    confirmed = 0
    for k in range(1, 1 + RESEEDED):
        other = judge(engine, profile, _reseeded(case, k), compare, tie_break, batch_needed)
        if other and (theirs := rj.owner(other)) is not None and theirs.mode != owner.mode:
            break
        confirmed += bool(other)
    else:
        if confirmed >= CONFIRMED:
            return found
    return judge(engine, profile, case, compare, tie_break, batch_needed, misread=False)


def _two_rules(engine, profile, case: rs.RejectionCase, found, compare, tie_break: str, diverges):
    """A batch failure (``found``): does it need two rules? Where the batch at the failing request's temperature
    alone replays, it is RS-MIXED-1's; where it fails there too, that batch is the case. Does a sampled request's
    failure need its draws? Where the batch with every request greedy replays, its draws depend on the batch
    (RS-RNG-1). Returns ``(case, found)``."""
    owner = rj.owner(found)
    if owner is None or owner.request < 0 or owner.mode not in rj.BATCH_MODES:  # a misreading names its own cause
        return case, found
    if len(set(case.temperature.tolist())) > 1:
        same = rj.one_temperature(case, owner.request)
        if not diverges(same):
            evidence = f"{owner.evidence}; at one temperature the batch replays"
            return case, [rj.Violation("RS-MIXED-1", "request-verified-by-another-rule", evidence, owner.request)]
        if not needs_batch(same, diverges):
            return case, found
        case, found = same, judge(engine, profile, same, compare, tie_break, batch_needed=True)
        owner = rj.owner(found)
    # a sampled request that parts only in the batch: its rows read wrongly, or its draws? Greedy, it uses none
    if owner is None or owner.request < 0 or case.temperature[owner.request] <= 0:
        return case, found
    if not any(diverges(rj.greedy_marked(case, shift)) for shift in range(rj.MARKINGS)):
        evidence = f"{owner.evidence}; with every request greedy the batch replays: its draws depend on the batch"
        return case, [rj.Violation("RS-RNG-1", "depends-on-batch", evidence, owner.request)]
    return case, found


def _general_rule(engine, profile, case: rs.RejectionCase, found, compare, tie_break: str, usable=lambda c: True):
    """A one-hot failure (``found``, owned by RS-ONEHOT-1): does it need the missing ``q``? Where the case with ``q``
    given one-hot (which the general rule decides the same way) fails the general rule too, it is that rule's
    failure (RS-PROB-1, -2 or -4), shown on ``case``; a misreading of ``q`` is no explanation, ``case`` having none."""
    owner = rj.owner(found)
    if owner is None or owner.requirement != "RS-ONEHOT-1" or not (given := rj.explicit_one_hot(case)):
        return found
    general = rj.owner(judge(engine, profile, given, compare, tie_break, misread=False)) if usable(given) else None
    if general is None or general.requirement not in ("RS-PROB-1", "RS-PROB-2", "RS-PROB-4"):
        return found
    evidence = f"{owner.evidence}; with q given one-hot: {general.evidence}"
    return [rj.Violation(general.requirement, general.mode, evidence, owner.request)]


# the seeds a masked failure is tried on with its mask lifted (``_mask_needed``): its own, then as many others
LIFTED_SEEDS = 8


def _mask_needed(engine, profile, case: rs.RejectionCase, found, compare, tie_break: str, usable):
    """A token with p = 0 emitted (``found``, owned by RS-PROB-3): does the failure need the mask? With every masked
    logit lifted to a tiny probability (``rj.masks_lifted``: the oracle decides as before) on ``case``'s seeds or
    another of ``LIFTED_SEEDS`` (the token the engine emits may be the one lifted by chance), an engine that still
    parts from the oracle breaks the rule that decides the position, whatever the mask: that case and its
    violations are the failure. Returns ``(case, found, compare)``, ``compare`` as that case was judged."""
    from .exact import comparable  # exact judges its cases through this module

    lifted = rj.masks_lifted(case)
    if lifted is None:
        return case, found, compare
    # compared with the oracle wherever it can be: a check that judged only the output contract on its case (one
    # near a boundary) still compares the case without the mask, as the minimal case is judged whole
    whole = compare or (True if profile is None else exactly_compared(profile))
    for k in range(LIFTED_SEEDS if case.seeds is not None else 1):
        candidate = _reseeded(lifted, k) if k else lifted
        if not (usable(candidate) and comparable(candidate, tie_break)):
            continue
        lifted_found = judge(engine, profile, candidate, whole, tie_break)
        # a lifted token keeps a probability no draws reach: a parting the draws would explain (RS-RNG-3) is the
        # same token emitted, not another rule's failure
        if lifted_found and not any(v.requirement == "RS-RNG-3" for v in lifted_found):
            return candidate, settled(engine, profile, candidate, lifted_found, whole, tie_break), whole
    return case, found, compare


def attribute(
    engine,
    profile,
    case: rs.RejectionCase,
    compare: bool | str,
    tie_break: str,
    usable: Callable[[rs.RejectionCase], bool],
) -> Attributed:
    """``case`` shrunk while ``engine`` diverges from the oracle on it (``usable``: a candidate the check would
    judge), and judged alone; a minimal case of several requests whose requests each replay alone is judged as a
    batch failure (``batch_needed``)."""
    still_diverges = _diverges(engine, profile, compare, tie_break, usable)
    start = case
    if case.batch_size > 2:  # a shortcut through a large batch: its first diverging request alone, if that diverges
        first = rj.owner(judge(engine, profile, case, compare, tie_break))
        if first is not None and first.request >= 0 and still_diverges(one := reordered(case, [first.request])):
            start = one
    minimal = shrink.minimise(start, smaller_cases, still_diverges)
    batch_needed = needs_batch(minimal, still_diverges)
    found = judge(engine, profile, minimal, compare, tie_break, batch_needed)
    if not found:  # the engine is not deterministic on this case: judge the case as it failed
        minimal, found = case, judge(engine, profile, case, compare, tie_break)
    found = settled(engine, profile, minimal, found, compare, tie_break, batch_needed)
    owner = rj.owner(found)
    if batch_needed:
        minimal, found = _two_rules(engine, profile, minimal, found, compare, tie_break, still_diverges)
        owner = rj.owner(found)
    if (
        owner is not None
        and owner.mode in ("forced-row-ignored", "forced-row-differs")
        and (plain := rj.unforced(minimal))
    ):
        # does the failure need forcing? With the forced rows one-hot logits instead, the rule alone decides them
        plain_found = judge(engine, profile, plain, compare, tie_break) if usable(plain) else []
        if plain_found:
            minimal, found, owner = plain, plain_found, rj.owner(plain_found)
    if owner is not None and owner.mode == "forced-row-logits-read":  # the forced row's logits, or its -inf?
        valid = rj.finite_forced_rows(minimal)
        valid_found = judge(engine, profile, valid, compare, tie_break) if usable(valid) else []
        if any(v.mode == "valid-input-rejected" for v in valid_found):
            minimal, found, owner = valid, valid_found, rj.owner(valid_found)
    if owner is not None and owner.mode == "zero-probability-token":
        minimal, found, compare = _mask_needed(engine, profile, minimal, found, compare, tie_break, usable)
        owner = rj.owner(found)
    if owner is not None and owner.mode == "empty-residual-sample-differs":  # does it need the empty residual?
        given = rj.residual_given_mass(minimal)
        given_found = judge(engine, profile, given, compare, tie_break) if given and usable(given) else []
        if given is not None and given_found:
            minimal, found = given, settled(engine, profile, given, given_found, compare, tie_break)
            owner = rj.owner(found)
    if owner is not None and owner.requirement == "RS-GREEDY-3":  # does the failure need the tie? Break it and see
        untied = rj.ties_broken(minimal)
        untied_found = judge(engine, profile, untied, compare, tie_break) if usable(untied) else []
        if untied_found:
            minimal, found, owner = untied, untied_found, rj.owner(untied_found)
    found = _general_rule(engine, profile, minimal, found, compare, tie_break, usable)
    owner = rj.owner(found)
    if owner is not None and owner.request >= 0 and owner.requirement in rj.SAMPLED_RULES and not batch_needed:
        # a sampled position parted from the oracle: its rule, or the draws it used? A row of the request alone
        # without drafts holds no rule but the sample: if one of them parts too, the draws are not the reference
        for twin in rj.draws_twins(minimal, owner.request):
            twin_found = judge(engine, profile, twin, compare, tie_break) if usable(twin) else []
            if any(v.requirement == "RS-RNG-3" for v in twin_found):
                minimal, found, owner = twin, twin_found, rj.owner(twin_found)
                break
    return Attributed(minimal, found, owner or rj.Violation("RS-LAYOUT-2", "unreproducible", ""))


def document(case: rs.RejectionCase, attributed: Attributed, requirements: tuple[str, ...], tie_break: str) -> dict:
    """The standalone reproduction: the minimal case, blamed on its owner (``specconform replay`` judges it so)."""
    owner = attributed.owner
    entry = vectors.exact_case(
        "minimal", [owner.requirement, *[r for r in requirements if r != owner.requirement]], attributed.minimal
    )
    entry["tie_break"] = tie_break
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "rejection",
        "fingerprint": owner.fingerprint,
        "finding": owner.requirement,
        "original_size": case_size(case),
        "minimal_size": case_size(attributed.minimal),
        "exact": [entry],
        "errors": [],
    }


def record(
    tally: Tally,
    profile,
    requirements: tuple[str, ...],
    own: str,
    owner: rj.Violation,
    evidence: str,
    reproduction: dict | None = None,
) -> None:
    """Record a failure under ``owner``'s requirement; where it is not one of the check's ``requirements``, the
    check's ``own`` requirement reads BLOCKED, naming it. An owner of a class ``profile`` does not claim is no failure
    of the engine's (the case lies outside what it promises): ``own`` counts it as NOT_APPLICABLE."""
    outside = attribution.unclaimed(profile, owner.requirement) if profile is not None else ""
    if outside:
        tally.not_applicable(outside, own)
        return
    if owner.requirement not in requirements:
        tally.blocked(own, owner.requirement, f"its minimal case fails {owner.requirement} ({owner.mode})")
    tally.violated(owner.requirement, owner.mode, evidence, reproduction=reproduction, finding=owner.requirement)


def exactly_compared(profile) -> bool | str:
    """What of a statistical check's case is compared with the oracle token for token: every seeded request on an
    engine that claims the reference draws, else the greedy requests only."""
    return True if "reference-draws" in profile.capabilities else "greedy"


# what ``gate`` met before: a first violation's fingerprint -> (its owner, the evidence, the reproduction)
Gated = dict[str, tuple[rj.Violation, str, dict]]


def gate(engine, profile, case: rs.RejectionCase, tally: Tally, own: str, seen: Gated, label: str) -> bool:
    """RUN-FINDING-1 before statistics: whether a few trials of a statistical check's ``case`` (one batch) already
    break the output contract or part from the oracle where it can be compared (``exactly_compared``). Then the
    case is shrunk and judged alone (``attribute``) and recorded under its owner, ``own`` reading BLOCKED where that
    is another: the statistics would only count the broken rows as samples. ``seen`` keeps, per first violation met,
    where it went, so that later cases failing the same way are not shrunk again."""
    tie_break = profile.tie_break
    compare = exactly_compared(profile) if comparable(case, tie_break) else False
    found = judge(engine, profile, case, compare, tie_break)
    if (first := rj.owner(found)) is None:
        return False
    if first.fingerprint not in seen:

        def usable(candidate: rs.RejectionCase) -> bool:
            return (not compare or comparable(candidate, tie_break)) and not outside_contract(profile, candidate)

        attributed = attribute(engine, profile, case, compare, tie_break, usable)
        evidence = (
            f"{label}: {attributed.owner.evidence}; minimised from {case_size(case)} rows to "
            f"{case_size(attributed.minimal)} (before the statistics: they would count these rows as samples)"
        )
        seen[first.fingerprint] = (
            attributed.owner,
            evidence,
            document(case, attributed, tally.requirements, tie_break),
        )
    owner, evidence, reproduction = seen[first.fingerprint]
    record(tally, profile, tally.requirements, own, owner, evidence, reproduction)
    return True


# trials of a statistical case judged exactly after its statistics failed, on an engine whose every trial can be
# compared with the oracle (``second_look``)
SECOND_LOOK_TRIALS = 256


def second_look(engine, profile, case: rs.RejectionCase, tally: Tally, own: str, seen: Gated, label: str) -> bool:
    """After a statistical test failed on an engine that claims the reference draws: whether ``SECOND_LOOK_TRIALS``
    trials of it (``case``) part from the oracle exactly (``gate``); then that is the failure, not the statistic."""
    return exactly_compared(profile) is True and gate(engine, profile, case, tally, own, seen, label)
