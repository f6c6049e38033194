"""Seeded requests (RS-RNG-1): a seeded request's tokens do not depend on its batch, and its draws are a
function of ``(seed, position)``."""

from __future__ import annotations

import numpy as np

from ... import stats
from ...cases.rejection import case_size, reordered
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ..catalogue import check
from . import minimal
from .distribution import GATE_TRIALS, trial_case
from .minimal import comparable
from .output import describe_case, outside_contract, sample_output


@check(
    "rejection/seeded-independence",
    cls="rs.seeded",
    covers=("RS-RNG-1",),
    needs=("rejection", "seeded"),
    description="a seeded request's tokens do not depend on its batch",
)
def seeded_independence(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-RNG-1 on 20 seeded requests (V of 7, 100 or 1000, 1..3 drafts drawn from a given q, temperature 1): each
    sampled alone, then in a batch with 1..3 other seeded requests, in the last slot, the first and (beside two
    others or more) the second; its tokens must be the same in every one. On an engine that claims the reference
    draws, a divergence is judged against the oracle and goes to the requirement its minimal case violates
    (``attributed``)."""
    tally = Tally(requirements)
    _seeded_alone_and_in_batches(engine, ctx, tally, "RS-RNG-1", neighbours_seeded=True)
    return tally.outcome("20 seeded requests alone and in a batch, last, first and between the others")


def _seeded_alone_and_in_batches(engine, ctx: Context, tally: Tally, rid: str, neighbours_seeded: bool) -> None:
    """Count into ``tally`` under ``rid`` 20 seeded requests each sampled alone and then beside 1..3 other requests
    (seeded ones, or with ``neighbours_seeded=False`` the same requests without their seeds), in the last slot, the
    first and (beside two others or more) the second: its tokens must be the same in every one."""
    rng = np.random.default_rng(ctx.seed)
    for n in range(20):
        V = int(rng.choice([7, 100, 1000]))
        K = int(rng.integers(1, 4))
        logits = rng.normal(size=(K + 1, V))
        q = rng.dirichlet(np.ones(V), size=K)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        single = rs.RejectionCase(logits, drafts, [K], [1.0], q, seeds=[seed], positions=[position])
        alone, _ = sample_output(engine, ctx.profile, single)
        others = int(rng.integers(1, 4))
        batch = rs.RejectionCase(
            np.concatenate([rng.normal(size=(2 * others, V)), logits]),
            [int(rng.integers(0, V)) for _ in range(others)] + drafts,
            [1] * others + [K],
            [0.7] * others + [1.0],
            np.concatenate([rng.dirichlet(np.ones(V), size=others), q]),
            seeds=list(rng.integers(0, 2**62, others)) + [seed],
            positions=[0] * others + [position],
            seeded=None if neighbours_seeded else [False] * others + [True],
        )
        # the seeded request last, then moved to the front and (with two others or more) between them, as a
        # scheduler's condensing and reordering moves it: its tokens depend on none of these (RS-RNG-1)
        slots = [others, 0] + ([1] if others >= 2 else [])
        for slot in slots:
            order = [i for i in range(others) if i < slot] + [others] + [i for i in range(others) if i >= slot]
            in_slot = batch if slot == others else reordered(batch, order)
            together, _ = sample_output(engine, ctx.profile, in_slot)
            if np.asarray(together)[slot, : K + 1].tolist() != np.asarray(alone)[0, : K + 1].tolist():
                seen_as = (
                    f"seeded request emitted {np.asarray(alone)[0].tolist()} alone and "
                    f"{np.asarray(together)[slot].tolist()} in slot {slot} of a batch of {others + 1}"
                )
                if attributed(engine, ctx, tally, rid, [single, in_slot], n, seen_as):
                    break
                neighbours = "" if neighbours_seeded else " (the others unseeded)"
                tally.violated(
                    rid,
                    "depends-on-batch" if neighbours_seeded else "depends-on-unseeded-neighbours",
                    f"case {n}: seeded request emitted {np.asarray(alone)[0].tolist()} alone and "
                    f"{np.asarray(together)[slot].tolist()} in slot {slot} of a batch of {others + 1}{neighbours}",
                )
                break
            tally.exercised(rid)


def attributed(
    engine, ctx: Context, tally: Tally, rid: str, compared: list[rs.RejectionCase], n: int, seen_as: str = ""
) -> bool:
    """Whether a seeded request's divergence went to the requirement its minimal case violates (RUN-FINDING-1):
    on an engine that claims the reference draws, where one of the ``compared`` cases (the request alone, then in
    its batch) parts from the oracle, that case is shrunk and judged alone as the exact checks judge one
    (``minimal.attribute``); a batch that misreads its rows is RS-LAYOUT-1's, not ``rid``'s."""
    if "reference-draws" not in ctx.profile.capabilities:
        return False
    tie_break = ctx.profile.tie_break

    def usable(candidate: rs.RejectionCase) -> bool:
        return comparable(candidate, tie_break) and not outside_contract(ctx.profile, candidate)

    for case in compared:
        if not usable(case) or not minimal.judge(engine, ctx.profile, case, True, tie_break):
            continue
        found = minimal.attribute(engine, ctx.profile, case, True, tie_break, usable)
        owner = found.owner
        evidence = (
            f"case {n}: {seen_as + '; ' if seen_as else ''}{owner.evidence} ({describe_case(found.minimal)}); "
            f"minimised from case {n} ({case_size(case)} rows to {case_size(found.minimal)})"
        )
        document = minimal.document(case, found, tally.requirements, tie_break)
        minimal.record(tally, ctx.profile, tally.requirements, rid, owner, evidence, document)
        return True
    return False


@check(
    "rejection/counter-based-draws",
    cls="rs.seeded",
    covers=("RS-RNG-1",),
    needs=("rejection", "seeded"),
    description="a seeded step resumed at the next position replays the same tokens, whatever the call order",
    # where a seeded request's draws start is the caller's to say: an adapter that picks it is judged here
    observes={"RS-RNG-1": ("draw_offsets",)},
)
def counter_based_draws(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-RNG-1 beyond batch independence: a seeded request's draws are a function of ``(seed, position)``.

    A request at position ``P`` verifies drafts ``d0 d1`` over rows ``r0 r1 r2``; when it accepts
    ``d0``, the same seed at position ``P + 1`` verifying ``d1`` over rows ``r1 r2`` replays the rest of
    that step, so it must emit exactly what the first call emitted after ``d0``. Each pair is asked
    twice, in both orders. A generator seeded once per request (or per call) and advanced by its
    draws fails: its draws depend on how many came before, not on the position."""
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    replayed = 0
    for n in range(200):
        V = int(rng.choice([5, 37, 100]))
        logits = rng.normal(scale=1.5, size=(3, V))
        q = rng.dirichlet(np.ones(V) * 0.5, size=2)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        whole = rs.RejectionCase(logits, drafts, [2], [1.0], q, seeds=[seed], positions=[position])
        rest = rs.RejectionCase(logits[1:], drafts[1:], [1], [1.0], q[1:], seeds=[seed], positions=[position + 1])
        tokens, _ = sample_output(engine, ctx.profile, whole)
        first = [int(t) for t in np.asarray(tokens)[0, :3]]
        if first[0] != drafts[0] or first[1] == -1:
            continue  # d0 rejected: the rest of the step was never drawn
        for order in ("rest after whole", "rest before whole"):
            tokens, _ = sample_output(engine, ctx.profile, rest)
            if order == "rest before whole":
                sample_output(engine, ctx.profile, whole)
            again = [int(t) for t in np.asarray(tokens)[0, :2]]
            if again != first[1:]:
                if attributed(engine, ctx, tally, "RS-RNG-1", [whole, rest], n):
                    break
                tally.violated(
                    "RS-RNG-1",
                    "draws-depend-on-call-history",
                    f"case {n} ({order}): seed {seed} emitted {first} from position {position}, but {again} when "
                    f"the same step resumes at position {position + 1} (V={V}, drafts {drafts})",
                )
                break
            tally.exercised("RS-RNG-1")
        replayed += 1
    return tally.outcome(f"{replayed} accepted first drafts replayed from the next position, in both call orders")


# Calls of the independence test: two independent rows of it coincide in one call with probability about 1/63, in
# every call with about 4e-15 (a family-wise α of 1e-6 over far fewer tests).
INDEPENDENT_CALLS = 8
INDEPENDENCE_VOCAB = 64
# The standard distribution cases judged beside seeded companions: one whose first draft is mostly rejected (the
# recovery noise decides the token) and one with a vocabulary that is no multiple of a block size.
MIXED_DISTRIBUTION_CASES = ("reverse-ranked", "vocab-37")


@check(
    "rejection/mixed-seeding",
    cls="rs.seeded",
    covers=("RS-RNG-1", "RS-PROB-5"),
    needs=("rejection", "seeded", "mixed-seeding"),
    description="in a batch mixing seeded and unseeded requests, the seeded emit what they emit alone and the "
    "unseeded sample the exact distribution, independently",
)
def mixed_seeding(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """A batch mixing requests with and without a seed (rejection-sampling.md section 6, mixed batches), on engines
    that take one (capability ``mixed-seeding``):

    - RS-RNG-1: the 20 seeded requests of ``rejection/seeded-independence``, each alone and then beside the same
      neighbours without their seeds (``seeded`` false), in the last, first and second slot, emit the same tokens;
    - RS-PROB-5: the unseeded trials of two standard distribution cases (``MIXED_DISTRIBUTION_CASES``), each beside
      a seeded copy of itself in one batch, follow the exact output distribution (calibrated G-tests, specs/
      statistics.md); where only their accepted length deviates, the failure is RS-PROB-6's;
    - RS-PROB-5: a seeded request and two unseeded ones with the same input (one draft, one-hot, a uniform target
      over 64 ids) sampled in ``INDEPENDENT_CALLS`` calls: an unseeded row equal to another row of its batch in
      every call (probability about 4e-15 for independent rows) is no fresh sample of its distribution."""
    tally = Tally(requirements)
    _seeded_alone_and_in_batches(engine, ctx, tally, "RS-RNG-1", neighbours_seeded=False)
    lines = _unseeded_rows_distribution(engine, ctx, tally)
    _unseeded_rows_independent(engine, ctx, tally)
    return tally.outcome(
        "20 seeded requests alone and beside unseeded ones; unseeded trials beside seeded copies of themselves; "
        f"unseeded rows against a seeded twin over {INDEPENDENT_CALLS} calls\n" + "\n".join(lines)
    )


def _beside_seeded_copies(engine, profile):
    """A ``stats.Sampler`` whose every trial runs without a seed beside a seeded copy of itself in one batch
    (trial ``i`` in slot ``2 i``, its copy with ``seeds[i]`` in slot ``2 i + 1``); it returns the unseeded rows,
    ``[b, K + 1]``."""

    def sample(logits, drafts, num, q, temperature, seeds, positions):
        case = beside_seeded_copies(
            rs.RejectionCase(logits, drafts, num, temperature, q, seeds=seeds, positions=positions)
        )
        return np.asarray(sample_output(engine, profile, case)[0])[0::2]

    return sample


def beside_seeded_copies(trials: rs.RejectionCase) -> rs.RejectionCase:
    """The requests of ``trials`` (one draft count) each without its seed in slot ``2 i``, beside a seeded copy of
    itself in slot ``2 i + 1``; ``trials`` must carry seeds and positions."""
    if trials.seeds is None or trials.positions is None:
        raise ValueError("beside_seeded_copies: trials must carry seeds and positions; got None")
    b, V = trials.batch_size, trials.vocab_size
    K = int(trials.num_draft_tokens[0])
    q = trials.draft_probs
    return rs.RejectionCase(
        np.repeat(trials.target_logits.reshape(b, K + 1, V), 2, axis=0).reshape(-1, V),
        np.repeat(trials.draft_token_ids.reshape(b, K), 2, axis=0).reshape(-1),
        np.repeat(trials.num_draft_tokens, 2),
        np.repeat(trials.temperature, 2),
        None if q is None else np.repeat(q.reshape(b, K, V), 2, axis=0).reshape(-1, V),
        seeds=np.repeat(trials.seeds, 2),
        positions=np.repeat(trials.positions, 2),
        seeded=np.tile([False, True], b),
    )


def _unseeded_rows_distribution(engine, ctx: Context, tally: Tally) -> list[str]:
    """G-tests of the unseeded trials of ``MIXED_DISTRIBUTION_CASES`` beside seeded copies; returns their lines."""
    cases = [case for case in stats.standard_cases() if case.name in MIXED_DISTRIBUTION_CASES]
    target = stats.Power(ctx.deviation, ctx.power)
    alpha_test = stats.family_alpha_test(ctx.alpha, cases)
    sampler = _beside_seeded_copies(engine, ctx.profile)
    lines: list[str] = []
    seen: minimal.Gated = {}
    for i, case in enumerate(cases):
        few = beside_seeded_copies(trial_case(case, GATE_TRIALS, ctx.seed + i))
        if minimal.gate(engine, ctx.profile, few, tally, "RS-PROB-5", seen, f"{case.name} beside seeded copies"):
            lines.append(f"{case.name}: not tested, its rows fail before the statistics")
            continue
        trials = stats.planned_trials(case, target, alpha_test, ctx.trials)
        report = stats.distribution_check(sampler, case, trials, alpha_test, ctx.seed + i, target)
        more = beside_seeded_copies(trial_case(case, minimal.SECOND_LOOK_TRIALS, ctx.seed + i))
        if report.violations() and minimal.second_look(engine, ctx.profile, more, tally, "RS-PROB-5", seen, case.name):
            lines.append(f"{case.name}: failed; its trials part from the oracle exactly")
            continue
        lines += report.position_lines()
        if report.violations():
            judged = [*report.positions, report.accepted_length]  # position_lines' order
            failed = [line for line, judgement in zip(report.position_lines(), judged) if judgement.failed]
            if report.out_of_range:
                failed.append(f"{report.out_of_range} rows with an id outside [0, V) or a hole")
            # only the accepted length deviating: the right tokens at the wrong rate, RS-PROB-6's law (as
            # ``distribution.judge_report`` tells them apart); any position or bad row: the emitted distribution's
            tokens_off = report.out_of_range or any(judgement.failed for judgement in report.positions)
            rid, mode = (
                ("RS-PROB-5", "unseeded-rows-off-distribution") if tokens_off else ("RS-PROB-6", "accepted-length-law")
            )
            tally.violated(
                rid, mode, f"unseeded trials beside seeded copies of themselves ({trials} trials): " + "; ".join(failed)
            )
        elif all(t.counted for t, r in zip(report.positions, report.reach) if r > stats.UNREACHABLE):
            tally.exercised("RS-PROB-5")
    return lines


def _unseeded_rows_independent(engine, ctx: Context, tally: Tally) -> None:
    """A seeded request and two unseeded ones with the same input, ``INDEPENDENT_CALLS`` calls: no unseeded row may
    equal another row of its batch in every call."""
    logits = np.zeros((3 * 2, INDEPENDENCE_VOCAB))
    draft = int(np.random.default_rng(ctx.seed).integers(0, INDEPENDENCE_VOCAB))
    case = rs.RejectionCase(logits, [draft] * 3, [1] * 3, [1.0] * 3, seeds=[ctx.seed] * 3, seeded=[True, False, False])
    rows = [np.asarray(sample_output(engine, ctx.profile, case)[0])[:, :2].tolist() for _ in range(INDEPENDENT_CALLS)]
    for first, second, names in ((1, 0, "the seeded"), (2, 0, "the seeded"), (2, 1, "the other unseeded")):
        if all(call[first] == call[second] for call in rows):
            tally.violated(
                "RS-PROB-5",
                "unseeded-row-copies-another",
                f"unseeded request {first} emitted what {names} request {second} emitted in all "
                f"{INDEPENDENT_CALLS} calls, same input (one draft {draft}, one-hot; a uniform target over "
                f"{INDEPENDENCE_VOCAB} ids): {[call[first] for call in rows]}",
            )
            return
    tally.exercised("RS-PROB-5")
