"""The counting and metrics entry points (AC-TENSOR-1; accepted-tokens.md section 4): ``count_emitted_validated``,
``acceptance_stats`` and its ``observe`` handed arguments outside their legal values, and their legal edges."""

from __future__ import annotations

import math

from ... import shrink
from ...core import Context, Outcome, Tally
from ...oracle import counting as ac
from ...oracle import metrics_judge as mj
from ..catalogue import check
from .common import REJECTED, accepts, as_ints, device_tensor, rejects

# (K, row, commit limit) steps of one request each, over max_positions 2 with EOS 9: an accepted run, a discarded
# row, an EOS ending the step at its first token, a commit limit of 2
STEPS = ((2, [4, 5, -1], None), (2, [-1, -1, -1], None), (1, [9, 3, -1], None), (2, [4, 5, 6], 2))
EOS = (9,)

# A lambda's defaults bind the loop's values as it is made; mypy cannot type such a lambda (python/mypy#15459,
# open), hence its `# type: ignore[misc]`.


def _metrics_of(stats) -> dict:
    return {
        "acceptance_rate": float(stats.acceptance_rate),
        "mean_acceptance_length": float(stats.mean_acceptance_length),
        "accepted_per_position": [int(a) for a in stats.accepted_per_position],
        "per_position_rates": [float(r) for r in stats.per_position_rates()],
        "num_discarded": int(stats.num_discarded),
    }


def _same_metrics(a: dict, b: dict) -> bool:
    def same(x, y):
        if isinstance(x, list):
            return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
        return (math.isnan(x) and math.isnan(y)) or x == y

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


@check(
    "counting/tensor-api",
    cls="ac.tensor-api",
    covers=("AC-TENSOR-1",),
    needs=("counting", "metrics", "tensor-api"),
    description=(
        "the counting and metrics entry points reject arguments outside their legal values naming them, and a"
        " rejected step changes no metric; rows of width 0 and max_positions 0 are legal"
    ),
)
def counting_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """AC-TENSOR-1 through ``engine.tensor_api``: ``count_emitted_validated`` and ``acceptance_stats`` handed
    arguments outside their legal values (1-D or float or listed ``token_ids``, ``vocab_size`` 0, True or 4.0,
    ``max_positions`` -1, True or 2.0, EOS ids that are no integers, ``observe``'s counts and commit limits of
    the wrong kind, shape or range) each raise a ValueError naming the argument, and a rejected ``observe``
    leaves every metric equal to the oracle's over the steps observed; rows of width 0 count 0, and
    ``max_positions`` 0 is legal."""
    api = engine.tensor_api
    tally = Tally(requirements)
    rid = "AC-TENSOR-1"
    rows = device_tensor([[1, -1, 3], [4, 2, -1]], "int64")
    counting = {
        "1-D token_ids": ("token_ids", device_tensor([1, -1], "int64"), 5),
        "float token_ids": ("token_ids", rows.float(), 5),
        "token_ids given as a list": ("token_ids", [[1, -1]], 5),
        "vocab_size 0": ("vocab_size", rows, 0),
        "vocab_size True": ("vocab_size", rows, True),
        "vocab_size 4.0": ("vocab_size", rows, 4.0),
    }
    for case, (argument, token_ids, vocab_size) in counting.items():
        rejects(tally, rid, case, argument, lambda t=token_ids, v=vocab_size: api.count_emitted_validated(t, v))  # type: ignore[misc]
    empty_rows = device_tensor([[], []], "int64")
    observed = accepts(
        tally, rid, "rows of width 0", lambda: [as_ints(x) for x in api.count_emitted_validated(empty_rows, 5)]
    )
    if observed is not REJECTED:
        expected = [[ac.num_emitted([]) for _ in range(2)], [0, 0], [0, 0]]
        if observed == expected:
            tally.exercised(rid)
        else:
            tally.violated(rid, "legal-value-misjudged", f"two rows of width 0: {observed}, expected {expected}")
    creation = {
        "max_positions -1": ("max_positions", -1, ()),
        "max_positions True": ("max_positions", True, ()),
        "max_positions 2.0": ("max_positions", 2.0, ()),
        "a float EOS id": ("eos_token_ids", 2, (1.5,)),
        "a boolean EOS id": ("eos_token_ids", 2, (True,)),
    }
    for case, (argument, max_positions, eos) in creation.items():
        rejects(tally, rid, case, argument, lambda m=max_positions, e=eos: api.acceptance_stats(m, e))  # type: ignore[misc]
    _metrics_cases(engine, tally)
    return tally.outcome(
        "counting and metrics arguments outside their legal values are rejected naming the argument, and a rejected "
        "observe changes no metric; rows of width 0 and max_positions 0 are legal"
    )


def _observe_cases() -> dict[str, tuple[str, tuple]]:
    one_row = device_tensor([[4, 5, -1]], "int64")
    two = device_tensor([2], "int64")
    return {
        "1-D token_ids": ("token_ids", (two, one_row[0], None)),
        "float token_ids": ("token_ids", (two, one_row.float(), None)),
        "float num_draft_tokens": ("num_draft_tokens", (device_tensor([2.0], "float32"), one_row, None)),
        "num_draft_tokens for 2 rows of 1": ("num_draft_tokens", (device_tensor([1, 2], "int64"), one_row, None)),
        "a draft count above max_positions": ("num_draft_tokens", (device_tensor([3], "int64"), one_row, None)),
        "a negative draft count": ("num_draft_tokens", (device_tensor([-1], "int64"), one_row, None)),
        "float commit_limits": ("commit_limits", (two, one_row, device_tensor([1.0], "float32"))),
        "a commit limit of 0": ("commit_limits", (two, one_row, device_tensor([0], "int64"))),
        "commit_limits for 2 rows of 1": ("commit_limits", (two, one_row, device_tensor([1, 1], "int64"))),
        "commit_limits given as a list": ("commit_limits", (two, one_row, [1])),
    }


def _metrics_judged_canonically(engine, tally: Tally) -> bool:
    """Whether metrics of ``STEPS`` that part from the oracle's are the engine's rules' and not the entry point's
    (RUN-FINDING-1): where the engine's canonical ``acceptance_metrics`` parts from the oracle on ``STEPS`` too, the
    stream is shrunk and judged alone as ``counting/metrics`` judges one, and AC-TENSOR-1 reads BLOCKED."""
    if not hasattr(engine, "acceptance_metrics"):
        return False
    judged = list(mj.METRICS)

    def differs(steps) -> bool:
        return bool(mj.metric_violations(steps, EOS, engine.acceptance_metrics(list(steps), EOS), judged))

    if not differs(list(STEPS)):
        return False
    small = shrink.minimise(list(STEPS), mj.smaller_streams, differs)
    first = mj.owner(mj.metric_violations(small, EOS, engine.acceptance_metrics(small, EOS), judged))
    if first is None:  # the minimal stream's metrics agreed when asked again: nothing to attribute
        return False
    rid, mode, shown = first
    tally.blocked("AC-TENSOR-1", rid, f"its minimal stream fails {rid} ({mode})")
    tally.violated(rid, mode, f"through acceptance_metrics as well, minimised to {small}: {shown}", finding=rid)
    return True


def _metrics_cases(engine, tally: Tally) -> None:
    """Each bad ``observe`` after the valid ``STEPS``: rejected naming its argument, every metric then the
    oracle's over ``STEPS``; a step of two rows (one without drafts) and ``max_positions`` 0 are legal."""
    rid = "AC-TENSOR-1"
    api = engine.tensor_api
    oracle = ac.AcceptanceMetrics(max_positions=2)
    for k, row, limit in STEPS:
        oracle.observe(k, row, EOS, limit)
    expected = {
        "acceptance_rate": oracle.acceptance_rate,
        "mean_acceptance_length": oracle.mean_acceptance_length,
        "accepted_per_position": oracle.accepted_per_position,
        "per_position_rates": oracle.per_position_rates(),
        "num_discarded": oracle.num_discarded,
    }

    def observed_steps():
        stats = api.acceptance_stats(2, EOS)
        for k, row, limit in STEPS:
            stats.observe(
                device_tensor([k], "int64"),
                device_tensor([row], "int64"),
                None if limit is None else device_tensor([limit], "int64"),
            )
        return stats

    stats = accepts(tally, rid, "the valid steps", observed_steps)
    if stats is REJECTED:
        return
    if _same_metrics(_metrics_of(stats), expected):
        tally.exercised(rid)
    elif not _metrics_judged_canonically(engine, tally):
        tally.violated(rid, "legal-value-misjudged", f"metrics {_metrics_of(stats)}, expected {expected}")
    for case, (argument, arguments) in _observe_cases().items():
        stats = observed_steps()
        rejected = rejects(tally, rid, case, argument, lambda s=stats, a=arguments: s.observe(*a))  # type: ignore[misc]
        if rejected and not _same_metrics(_metrics_of(stats), expected):
            message = f"{case}: metrics {_metrics_of(stats)}, expected {expected}"
            tally.violated(rid, "rejected-step-counted", message)
    two_rows = accepts(
        tally,
        rid,
        "max_positions 0, a step of two rows without drafts",
        lambda: api.acceptance_stats(0, ()).observe(
            device_tensor([0, 0], "int64"), device_tensor([[4], [-1]], "int64")
        ),
    )
    if two_rows is not REJECTED:
        if as_ints(two_rows) == [0, 0]:
            tally.exercised(rid)
        else:
            tally.violated(rid, "legal-value-misjudged", f"no drafts: accepted {as_ints(two_rows)}, expected [0, 0]")
