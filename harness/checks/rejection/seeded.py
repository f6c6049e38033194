"""Seeded requests (RS-RNG-1): a seeded request's tokens do not depend on its batch, and its draws are a
function of ``(seed, position)``."""

from __future__ import annotations

import numpy as np

from ...cases.rejection import reordered
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ..catalogue import check
from .output import sample_output


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
    others or more) the second; its tokens must be the same in every one."""
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    for n in range(20):
        V = int(rng.choice([7, 100, 1000]))
        K = int(rng.integers(1, 4))
        logits = rng.normal(size=(K + 1, V))
        q = rng.dirichlet(np.ones(V), size=K)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        alone, _ = sample_output(
            engine, ctx.profile, rs.RejectionCase(logits, drafts, [K], [1.0], q, seeds=[seed], positions=[position])
        )
        others = int(rng.integers(1, 4))
        batch = rs.RejectionCase(
            np.concatenate([rng.normal(size=(2 * others, V)), logits]),
            [int(rng.integers(0, V)) for _ in range(others)] + drafts,
            [1] * others + [K],
            [0.7] * others + [1.0],
            np.concatenate([rng.dirichlet(np.ones(V), size=others), q]),
            seeds=list(rng.integers(0, 2**62, others)) + [seed],
            positions=[0] * others + [position],
        )
        # the seeded request last, then moved to the front and (with two others or more) between them, as a
        # scheduler's condensing and reordering moves it: its tokens depend on none of these (RS-RNG-1)
        slots = [others, 0] + ([1] if others >= 2 else [])
        for slot in slots:
            order = [i for i in range(others) if i < slot] + [others] + [i for i in range(others) if i >= slot]
            together, _ = sample_output(engine, ctx.profile, batch if slot == others else reordered(batch, order))
            if np.asarray(together)[slot, : K + 1].tolist() != np.asarray(alone)[0, : K + 1].tolist():
                tally.violated(
                    "RS-RNG-1",
                    "depends-on-batch",
                    f"case {n}: seeded request emitted {np.asarray(alone)[0].tolist()} alone and "
                    f"{np.asarray(together)[slot].tolist()} in slot {slot} of a batch of {others + 1}",
                )
                break
            tally.exercised("RS-RNG-1")
    return tally.outcome("20 seeded requests alone and in a batch, last, first and between the others")


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
        first, _ = sample_output(engine, ctx.profile, whole)
        first = [int(t) for t in np.asarray(first)[0, :3]]
        if first[0] != drafts[0] or first[1] == -1:
            continue  # d0 rejected: the rest of the step was never drawn
        for order in ("rest after whole", "rest before whole"):
            again, _ = sample_output(engine, ctx.profile, rest)
            if order == "rest before whole":
                sample_output(engine, ctx.profile, whole)
            again = [int(t) for t in np.asarray(again)[0, :2]]
            if again != first[1:]:
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
