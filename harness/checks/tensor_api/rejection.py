"""The sampler's own entry point (RS-TENSOR-1; rejection-sampling.md section 9): draft counts, ``max_spec_len`` and
``validate`` of the wrong kind, the defaults of ``temperature``, ``validate`` and ``seeds``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ..catalogue import check
from ..rejection import minimal
from ..rejection.minimal import comparable
from ..rejection.output import describe_case
from .common import REJECTED, accepts, as_ints, device_tensor, rejects

if TYPE_CHECKING:  # the light install has no torch: it is imported where it is used
    import torch


@check(
    "rejection/tensor-api",
    cls="rs.tensor-api",
    covers=("RS-TENSOR-1",),
    needs=("rejection", "tensor-api"),
    description=(
        "the sampler's own entry point rejects draft counts, max_spec_len and validate of the wrong kind "
        "naming them; omitted, temperature verifies greedily and validate validates"
    ),
)
def rejection_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-TENSOR-1 through ``engine.tensor_api.rejection_sample`` on one request of 2 drafts over V = 6:
    ``num_draft_tokens`` of a float or bool dtype, ``max_spec_len`` -1, True or 2.0, and ``validate`` 1 or
    ``"no"`` each raise a ValueError naming the argument; ``temperature`` omitted verifies greedily (the rows
    equal the oracle's at temperature 0, with and without ``max_spec_len`` 0 on a zero-draft request), and
    ``validate`` omitted rejects a draft id V naming ``draft_token_ids``; ``seeds`` omitted draws fresh randomness
    per request (``_fresh_draws``)."""
    api = engine.tensor_api
    device = api.device
    tally = Tally(requirements)
    rid = "RS-TENSOR-1"
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    drafts = [int(np.argmax(logits[0])), (int(np.argmax(logits[1])) + 1) % vocab]  # accepted, then rejected
    fields = {
        "target_logits": device_tensor(logits.tolist(), "float32", device),
        "draft_token_ids": device_tensor(drafts, "int64", device),
        "num_draft_tokens": device_tensor([2], "int64", device),
    }
    options: dict[str, object] = {"temperature": device_tensor([0.0], "float32", device)}
    # what is wrong -> (the argument an error must name, the tensors changed, the options changed)
    cases: dict[str, tuple[str, dict[str, torch.Tensor], dict[str, object]]] = {
        "float num_draft_tokens": (
            "num_draft_tokens",
            {"num_draft_tokens": device_tensor([2.0], "float32", device)},
            {},
        ),
        "boolean num_draft_tokens": (
            "num_draft_tokens",
            {
                "num_draft_tokens": device_tensor([True], "bool", device),
                "draft_token_ids": fields["draft_token_ids"][:1],
                "target_logits": fields["target_logits"][1:],
            },
            {},
        ),
        "max_spec_len -1": ("max_spec_len", {}, {"max_spec_len": -1}),
        "max_spec_len -1 without validation": ("max_spec_len", {}, {"max_spec_len": -1, "validate": False}),
        "max_spec_len True": ("max_spec_len", {}, {"max_spec_len": True}),
        "max_spec_len 2.0": ("max_spec_len", {}, {"max_spec_len": 2.0}),
        "validate 1": ("validate", {}, {"validate": 1}),
        "validate 'no'": ("validate", {}, {"validate": "no"}),
    }
    for case, (argument, changed, extra) in cases.items():
        given = {**fields, **changed}
        rejects(
            tally,
            rid,
            case,
            argument,
            lambda g=given, o={**options, **extra}: api.rejection_sample(  # type: ignore[misc]  # python/mypy#15459
                g["target_logits"], g["draft_token_ids"], g["num_draft_tokens"], **o
            ),
        )
    greedy = rs.RejectionCase(logits, drafts, [2], [0.0])
    expected = as_ints(rs.sample_case(greedy)[0])
    observed = accepts(
        tally,
        rid,
        "temperature omitted",
        lambda: as_ints(api.rejection_sample(*fields.values())[0]),
    )
    if observed is not REJECTED:
        if observed == expected:
            tally.exercised(rid)
        elif not judged_canonically(engine, ctx, tally, greedy):
            tally.violated(rid, "omitted-temperature-not-greedy", f"temperature omitted: {observed}, greedy {expected}")
    zero = rs.RejectionCase(logits[2:], [], [0], [0.0])
    expected_tokens, expected_num, _ = rs.sample_case(zero)
    observed = accepts(
        tally,
        rid,
        "max_spec_len 0 on a zero-draft request",
        lambda: api.rejection_sample(
            fields["target_logits"][2:],
            device_tensor([], "int64", device),
            device_tensor([0], "int64", device),
            max_spec_len=0,
        ),
    )
    if observed is not REJECTED:  # the width is max_spec_len + 1; a row is read through num_emitted
        tokens, num = observed
        shape, rows = tuple(tokens.shape), [row[: int(n)] for row, n in zip(as_ints(tokens), as_ints(num))]
        expected = [row[: int(n)] for row, n in zip(as_ints(expected_tokens), as_ints(expected_num))]
        if shape == (1, 1) and rows == expected:
            tally.exercised(rid)
        elif rows != expected and judged_canonically(engine, ctx, tally, zero):
            pass
        else:
            message = f"max_spec_len 0, no drafts: output of shape {shape}, rows {rows}; expected (1, 1), {expected}"
            tally.violated(rid, "legal-value-misjudged", message)
    rejects(
        tally,
        rid,
        "a draft id V with validate omitted",
        "draft_token_ids",
        lambda: api.rejection_sample(
            fields["target_logits"],
            device_tensor([drafts[0], vocab], "int64", device),
            fields["num_draft_tokens"],
            **options,
        ),
    )
    _fresh_draws(api, device, tally)
    return tally.outcome(
        "num_draft_tokens, max_spec_len and validate outside their legal values are rejected naming them; omitted, "
        "temperature verifies greedily, validate validates and seeds draw fresh"
    )


def judged_canonically(engine, ctx: Context, tally: Tally, case: rs.RejectionCase) -> bool:
    """Whether rows the entry point emitted for the greedy ``case`` that part from the oracle's are the engine's
    rule's and not the entry point's (RUN-FINDING-1): where the engine's canonical ``rejection_sample`` parts from
    the oracle on ``case`` too, the case is shrunk and judged alone as the exact checks judge one
    (``rejection.minimal``) and recorded under its owner, RS-TENSOR-1 reading BLOCKED."""
    tie_break = ctx.profile.tie_break
    if not minimal.judge(engine, ctx.profile, case, True, tie_break):
        return False
    found = minimal.attribute(engine, ctx.profile, case, True, tie_break, lambda c: comparable(c, tie_break))
    evidence = f"{found.owner.evidence} ({describe_case(found.minimal)}), through rejection_sample as well"
    document = minimal.document(case, found, tally.requirements, tie_break)
    minimal.record(tally, ctx.profile, tally.requirements, "RS-TENSOR-1", found.owner, evidence, document)
    return True


UNSEEDED_CALLS, UNSEEDED_VOCAB = 8, 64


def _fresh_draws(api, device: str, tally: Tally) -> None:
    """Two unseeded zero-draft requests with the same uniform distribution over 64 ids, sampled in 8 calls: with
    fresh draws they emit the same token in every call with probability ``64**-8 = 2**-48`` (the check's false
    alarm rate); requests that share one seed (all unseeded requests drawing seed 0) always do."""
    rid = "RS-TENSOR-1"
    logits = device_tensor(np.zeros((2, UNSEEDED_VOCAB)).tolist(), "float32", device)
    pairs = []
    for _ in range(UNSEEDED_CALLS):
        tokens, _ = api.rejection_sample(
            logits,
            device_tensor([], "int64", device),
            device_tensor([0, 0], "int64", device),
            temperature=device_tensor([1.0, 1.0], "float32", device),
        )
        first, second = as_ints(tokens)
        pairs.append((first[0], second[0]))
    if all(a == b for a, b in pairs):
        message = f"two unseeded requests with the same input emitted the same token in {UNSEEDED_CALLS} calls: {pairs}"
        tally.violated(rid, "unseeded-requests-share-draws", message)
    else:
        tally.exercised(rid)
