"""Golden vectors: generated from the oracle, checked in under ``specs/vectors/``.

``specconform vectors --write`` regenerates them; ``specconform vectors`` (and the test suite)
checks that regenerating changes nothing. Floats are written with 12 significant digits, and
``-inf``, ``inf`` and ``nan`` as strings, so that any JSON parser can read the files.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specs.interface import AddedRequest, BatchUpdate, Move

from . import contract
from .oracle import budget as tb
from .oracle import counting as ac
from .oracle import rejection as rs
from .spec import vectors_dir

FORMAT_VERSION = 1


def encode_float(x: float) -> Any:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.12g}")


def decode_float(x: Any) -> float:
    return float(x) if isinstance(x, str) else x


def encode_matrix(rows) -> list:
    return [[encode_float(float(v)) for v in row] for row in np.asarray(rows, dtype=np.float64)]


# ---------------------------------------------------------------------------------------------
# Thinking budget


@dataclass
class SlotStep:
    """What a slot proposes in a step: drafts, how many the sampler would accept, and the token
    the sampler would emit after them when that row is free (a forced row overrides it)."""

    drafts: list[int]
    accept: int
    free_token: int


def _commit_slot(forced_rows: list[int], step: SlotStep) -> list[int]:
    """Tokens a conforming sampler commits for one slot (TB-SPEC-3, RS-FORCE-1)."""
    out = []
    for j in range(len(step.drafts) + 1):
        forced = forced_rows[j]
        if j < len(step.drafts) and j < step.accept:
            draft = step.drafts[j]
            if forced in (-1, draft):
                out.append(draft)
                continue
            out.append(forced)
            return out
        out.append(step.free_token if forced == -1 else forced)
        return out
    raise AssertionError("unreachable")


def budget_scenario(
    name: str,
    requirements: list[str],
    start: list[int],
    end: list[int],
    steps: list[tuple[BatchUpdate | None, dict[int, SlotStep]]],
    scope: str = "request",
    max_num_reqs: int = 4,
    description: str = "",
    forced_token_ids: list[int] | None = None,
    other_end_token_ids: list[list[int]] | None = None,
) -> dict:
    """Run a scenario through the oracle and record the forced row of every logits row;
    ``forced_token_ids`` is a forced end sequence other than ``E`` (TB-END-1), ``other_end_token_ids`` the
    end markers accepted beside ``E`` (TB-END-3)."""
    batch = tb.BudgetBatch(start, end, max_num_reqs, scope, forced_token_ids, other_end_token_ids or ())
    recorded = []
    for update, slots in steps:
        batch.apply(update)
        num_draft = [len(slots[s].drafts) if s in slots else 0 for s in range(batch.batch_size)]
        drafts = [t for s in range(batch.batch_size) if s in slots for t in slots[s].drafts]
        forced = batch.forced_rows(num_draft, drafts)
        width = max(num_draft, default=0) + 1
        sampled, offset, recorded_forced, draft_offset = [], 0, [], 0
        for s in range(batch.batch_size):
            rows = forced[offset : offset + num_draft[s] + 1]
            slot_drafts = drafts[draft_offset : draft_offset + num_draft[s]]
            draft_offset += num_draft[s]
            seen = tb.observable_rows(rows, slot_drafts)
            recorded_forced += rows[:seen] + [None] * (len(rows) - seen)  # discarded rows: not judged
            offset += num_draft[s] + 1
            tokens = _commit_slot(rows, slots[s]) if s in slots else []
            sampled.append(tokens + [-1] * (width - len(tokens)))
        batch.commit(sampled)
        recorded.append(
            {
                "update": None if update is None else update.to_json(),
                "num_draft_tokens": num_draft,
                "draft_token_ids": drafts,
                "expected_forced": recorded_forced,
                "sampled_token_ids": sampled,
            }
        )
    vector = {
        "name": name,
        "description": description,
        "requirements": requirements,
        "start_token_ids": start,
        "end_token_ids": end,
        "scope": scope,
        "max_num_reqs": max_num_reqs,
        "steps": recorded,
    }
    if forced_token_ids is not None:
        vector["forced_token_ids"] = forced_token_ids
    if other_end_token_ids:
        vector["other_end_token_ids"] = other_end_token_ids
    return vector


def _sequential(
    prompt, budget, proposals, start, end, scope="request", name="", reqs=(), desc="", forced=None, others=None
):
    """One request, no drafts: each step the model proposes one token."""
    steps: list[tuple[BatchUpdate | None, dict[int, SlotStep]]] = []
    first = BatchUpdate(1, added=[AddedRequest(0, budget, prompt)])
    for i, token in enumerate(proposals):
        steps.append((first if i == 0 else None, {0: SlotStep([], 0, token)}))
    return budget_scenario(name, list(reqs), start, end, steps, scope, 1, desc, forced, others)


S1, E1 = [100], [101]  # one-token markers
S3, E4 = [90, 91, 92], [30, 17, 59, 32]  # multi-token markers: "<think>" and "</think>" as pieces
EO = [7, 7, 8]  # a self-overlapping end marker


def _isolating_budget_vectors() -> list[dict]:
    """Vectors whose first requirement is the only reading they separate: each fails on that
    requirement alone when an engine breaks it (tests/harness/test_requirement_mutants.py)."""
    s = [
        _sequential(
            [1],
            3,
            [100, 100, 100, 5, 6, 7],
            S1,
            E1,
            name="start-inside-section-is-content",
            reqs=["TB-MARK-1", "TB-COUNT-1"],
            desc="S inside an open section is a thinking token, not a new start: the 4th token is forced.",
        ),
        _sequential(
            [1],
            6,
            [100, 7, 7, 7, 8, 5, 6, 9, 9, 9],
            S1,
            EO,
            name="self-overlapping-end-closes",
            reqs=["TB-MARK-3", "TB-NATURAL-1"],
            desc="E = [7, 7, 8]: 7 7 7 8 closes the section, so nothing after it is forced.",
        ),
        _sequential(
            [1],
            2,
            [90, 91, 92, 5, 30, 17, 6, 7, 8, 9],
            S3,
            E4,
            name="count-includes-partial-end",
            reqs=["TB-COUNT-1", "TB-FORCE-2"],
            desc="The partial E (30) counts: at count 2 the budget forces E[1] = 17.",
        ),
        _sequential(
            [1],
            10,
            [90, 91, 92, 5, 30, 6, 30, 17, 59, 32, 8, 9],
            S3,
            E4,
            name="natural-close-multi-token",
            reqs=["TB-NATURAL-1", "TB-MARK-2"],
            desc="The model starts E, leaves it, and closes it later; with budget left nothing is forced.",
        ),
        _sequential(
            [1],
            4,
            [90, 91, 92, 5, 6, 7, 8, 9, 10],
            S3,
            E4,
            name="multi-token-start-across-steps",
            reqs=["TB-MARK-2", "TB-FORCE-1"],
            desc="S arrives one token per step; the section opens at its last token.",
        ),
        budget_scenario(
            "add-then-swap-in-one-update",
            ["TB-BATCH-1", "TB-BATCH-3"],
            S1,
            E1,
            [
                (
                    BatchUpdate(2, added=[AddedRequest(0, 0, [100]), AddedRequest(1, None, [1])]),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5)},
                ),
                (
                    BatchUpdate(2, added=[AddedRequest(1, 0, [100])], moved=[(0, 1, Move.SWAP)]),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5)},
                ),
            ],
            max_num_reqs=2,
            description="A request added into slot 1 is swapped to slot 0 in the same update: additions "
            "come before moves, so both slots are forced.",
        ),
        budget_scenario(
            "move-onto-occupied-slot",
            ["TB-BATCH-2", "TB-BATCH-1"],
            S1,
            E1,
            [
                (
                    BatchUpdate(
                        3, added=[AddedRequest(0, None, [1]), AddedRequest(1, 5, [1]), AddedRequest(2, 0, [100])]
                    ),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)},
                ),
                (
                    BatchUpdate(
                        2, removed=[1], added=[AddedRequest(1, None, [1])], moved=[(2, 0, Move.UNIDIRECTIONAL)]
                    ),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5)},
                ),
            ],
            max_num_reqs=3,
            description="UNIDIRECTIONAL (2, 0) replaces the untracked request in slot 0 with slot 2's forced one.",
        ),
        budget_scenario(
            "rows-slot-by-slot",
            ["TB-BATCH-5", "TB-UNTRACKED-1"],
            S1,
            E1,
            [
                (
                    BatchUpdate(
                        3, added=[AddedRequest(0, 0, [100]), AddedRequest(1, None, [100]), AddedRequest(2, 5, [100])]
                    ),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)},
                ),
            ],
            description="Slot 0 is forced, slots 1 and 2 are free: the forced row is the first.",
        ),
        budget_scenario(
            "spec-decode-committed-run",
            ["TB-SPEC-3", "TB-COUNT-1"],
            S1,
            E1,
            [
                (BatchUpdate(1, added=[AddedRequest(0, 4, [1, 100])]), {0: SlotStep([], 0, 5)}),
                (None, {0: SlotStep([6, 7], 2, 8)}),
                (None, {0: SlotStep([], 0, 9)}),
            ],
            max_num_reqs=1,
            description="A step commits 6 7 8 after drafts: the next row counts all three and is forced.",
        ),
        budget_scenario(
            "two-starts-in-one-committed-run",
            ["TB-SPEC-3", "TB-MARK-1"],
            S1,
            E1,
            [
                (BatchUpdate(1, added=[AddedRequest(0, 3, [])]), {0: SlotStep([], 0, 5)}),
                (None, {0: SlotStep([100, 6, 7], 3, 100)}),
                (None, {0: SlotStep([], 0, 9)}),
            ],
            max_num_reqs=1,
            description="One step commits S 6 7 S: the second S is a thinking token (TB-MARK-1), so the section holds "
            "6 7 S and the next row is forced.",
        ),
    ]
    return s


PHRASE_END = [40, 41, 101]  # a transition phrase [40, 41] then E1 (profile ``forced_end: phrase``)


def _forced_phrase_vectors() -> list[dict]:
    """Forced versus natural end (TB-END-1, TB-END-2): engines declaring ``forced_end: phrase``."""
    return [
        _sequential(
            [1],
            2,
            [100, 5, 6, 7, 8, 9, 10, 11],
            S1,
            E1,
            name="forced-phrase-after-budget",
            reqs=["TB-END-1", "TB-END-2"],
            desc="F = [40, 41] + E: two thinking tokens, then 40, 41 and E are forced; the positions after are free.",
            forced=PHRASE_END,
        ),
        _sequential(
            [1],
            2,
            [100, 5, 40, 7, 8, 9],
            S1,
            E1,
            name="forced-phrase-continued",
            reqs=["TB-END-1"],
            desc="The model emits the phrase's first token itself as the budget runs out: forcing continues with 41.",
            forced=PHRASE_END,
        ),
        _sequential(
            [1],
            3,
            [100, 5, 101, 6, 7, 8, 9, 10],
            S1,
            E1,
            name="natural-end-closes-without-phrase",
            reqs=["TB-END-2", "TB-NATURAL-1"],
            desc="E emitted by the model without the phrase closes the section: nothing after it is forced.",
            forced=PHRASE_END,
        ),
        _sequential(
            [1],
            3,
            [100, 5, 102, 6, 7, 8, 9, 10],
            S1,
            E1,
            name="other-end-marker-closes",
            reqs=["TB-END-3", "TB-NATURAL-1"],
            desc="[102] is an end marker accepted beside E: it closes the section, and nothing after it is forced.",
            others=[[102]],
        ),
        _sequential(
            [1],
            2,
            [100, 5, 6, 7, 8, 9],
            S1,
            E1,
            name="other-end-marker-not-forced",
            reqs=["TB-END-3", "TB-FORCE-1"],
            desc="With [102] accepted beside E, the budget still forces E.",
            others=[[102]],
        ),
    ]


def budget_vectors() -> dict:
    s = []
    s.append(
        _sequential(
            [1, 2],
            3,
            [100, 5, 6, 7, 8, 9, 10, 11],
            S1,
            E1,
            name="model-opened-budget-3",
            reqs=["TB-FORCE-1", "TB-MARK-1", "TB-COUNT-1", "TB-FORCE-5"],
            desc="S in the output opens the section; the 4th token after it is forced to E.",
        )
    )
    s.append(
        _sequential(
            [1],
            0,
            [100, 5, 6, 7],
            S1,
            E1,
            name="model-opened-budget-0",
            reqs=["TB-FORCE-4", "TB-API-1"],
            desc="Budget 0: the token right after S is forced to E[0].",
        )
    )
    s.append(_sequential([1], 1, [100, 5, 6, 7], S1, E1, name="model-opened-budget-1", reqs=["TB-FORCE-1"]))
    s.append(
        _sequential(
            [1],
            2,
            [90, 91, 92, 5, 30, 17, 6, 7, 8, 9],
            S3,
            E4,
            name="multi-token-end-continued",
            reqs=["TB-FORCE-2", "TB-MARK-2", "TB-COUNT-1"],
            desc="The model starts E (30, 17) as the budget runs out: forcing continues with 59, 32.",
        )
    )
    s.append(
        _sequential(
            [1],
            2,
            [90, 91, 92, 5, 6, 7, 8, 9, 10],
            S3,
            E4,
            name="multi-token-end-forced-whole",
            reqs=["TB-FORCE-2", "TB-MARK-2"],
        )
    )
    s.append(
        _sequential(
            [1],
            10,
            [100, 7, 7, 7, 8, 5, 6],
            S1,
            EO,
            name="self-overlapping-end-natural",
            reqs=["TB-MARK-3", "TB-NATURAL-1"],
            desc="E = [7, 7, 8]: the stream 7 7 7 8 completes E; nothing is forced.",
        )
    )
    s.append(
        _sequential(
            [1],
            2,
            [100, 5, 7, 7, 7, 9, 9],
            S1,
            EO,
            name="self-overlapping-end-forced",
            reqs=["TB-MARK-3", "TB-FORCE-2"],
        )
    )
    s.append(
        _sequential(
            [3, 100, 4, 4, 4],
            0,
            [5, 6, 7],
            S1,
            E1,
            name="prompt-opened-budget-0",
            reqs=["TB-PROMPT-2", "TB-PROMPT-1"],
            desc="The prompt leaves a section open with 3 thinking tokens: the first token is forced.",
        )
    )
    s.append(
        _sequential(
            [3, 100, 4, 4],
            5,
            [5, 6, 7, 8, 9, 10],
            S1,
            E1,
            name="prompt-opened-budget-5",
            reqs=["TB-PROMPT-1"],
            desc="Two prompt tokens after S count: 3 more are generated before E.",
        )
    )
    s.append(
        _sequential(
            [100, 4, 4, 4, 4, 101, 3],
            2,
            [100, 5, 6, 7, 8],
            S1,
            E1,
            name="prompt-closed-history",
            reqs=["TB-PROMPT-1"],
            desc="A section closed inside the prompt does not count; the new one gets the budget.",
        )
    )
    s.append(
        _sequential(
            [3, 90, 91],
            1,
            [92, 5, 6, 7, 8, 9, 10],
            S3,
            E4,
            name="prompt-partial-start",
            reqs=["TB-PROMPT-3", "TB-MARK-2"],
            desc="The prompt ends inside S; S completes with the first generated token.",
        )
    )
    s.append(
        _sequential(
            [3, 90, 91, 92, 5, 30, 17],
            2,
            [6, 7, 8, 9, 10],
            S3,
            E4,
            name="prompt-partial-end",
            reqs=["TB-PROMPT-3", "TB-FORCE-2"],
            desc="The prompt ends inside E with the budget spent: forcing continues E at 59.",
        )
    )
    s.append(
        _sequential(
            [1],
            5,
            [100, 5, 101, 6, 7, 100, 8, 9, 10, 11, 12, 13],
            S1,
            E1,
            name="natural-close-then-reopen-request-scope",
            reqs=["TB-SCOPE-1", "TB-NATURAL-1"],
            desc="A natural close after 1 thinking token leaves 4 for the next section.",
        )
    )
    s.append(
        _sequential(
            [1],
            2,
            [100, 5, 6, 7, 8, 100, 9, 10, 11, 12],
            S1,
            E1,
            name="reopen-after-spent-request-scope",
            reqs=["TB-SCOPE-1"],
            desc="After the budget is spent, a re-opened section is closed at once.",
        )
    )
    s.append(
        _sequential(
            [1],
            2,
            [100, 5, 6, 7, 8, 100, 9, 10, 11, 12],
            S1,
            E1,
            scope="section",
            name="reopen-after-spent-section-scope",
            reqs=["TB-SCOPE-2"],
            desc="Per-section scope: the re-opened section gets a fresh budget of 2.",
        )
    )
    # Speculative decoding and the batch contract.
    add3 = BatchUpdate(
        3, added=[AddedRequest(0, 2, [1, 100]), AddedRequest(1, None, [1, 100]), AddedRequest(2, 3, [1])]
    )
    s.append(
        budget_scenario(
            "spec-decode-mixed-batch",
            ["TB-SPEC-1", "TB-SPEC-2", "TB-SPEC-3", "TB-SPEC-4", "TB-BATCH-5", "TB-UNTRACKED-1"],
            S1,
            E1,
            [
                (add3, {0: SlotStep([5, 6, 7, 8], 4, 9), 1: SlotStep([5, 6], 2, 9), 2: SlotStep([], 0, 100)}),
                (
                    None,
                    {0: SlotStep([10, 11], 2, 12), 1: SlotStep([], 0, 9), 2: SlotStep([5, 6, 7, 8], 1, 9)},
                ),
                (None, {0: SlotStep([], 0, 13), 1: SlotStep([3], 1, 4), 2: SlotStep([101, 5], 2, 6)}),
            ],
            description="Slot 0 (budget 2, prompt-opened) crosses its budget inside its drafts; slot 1 is "
            "untracked; slot 2 has zero drafts, then drafts rejected after one acceptance.",
        )
    )
    s.append(
        budget_scenario(
            "spec-decode-all-zero-drafts",
            ["TB-SPEC-4", "TB-BATCH-5"],
            S1,
            E1,
            [
                (
                    BatchUpdate(
                        3, added=[AddedRequest(0, 0, [100]), AddedRequest(1, 0, [100]), AddedRequest(2, 1, [100])]
                    ),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)},
                ),
                (None, {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)}),
            ],
            description="Speculation on, but no drafts this step: every request owns one row and is forced there.",
        )
    )
    s.append(
        budget_scenario(
            "spec-decode-multi-token-end-in-drafts",
            ["TB-SPEC-1", "TB-SPEC-2", "TB-FORCE-2", "TB-MARK-2"],
            S3,
            E4,
            [
                (BatchUpdate(1, added=[AddedRequest(0, 2, [90, 91, 92])]), {0: SlotStep([5, 30, 17, 6], 4, 7)}),
                (None, {0: SlotStep([59, 8, 9], 3, 10)}),
            ],
            description="Drafts start E at the budget; the row after the partial E is forced to continue it.",
        )
    )
    s.append(
        budget_scenario(
            "batch-remove-add-move",
            ["TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3"],
            S1,
            E1,
            [
                (
                    BatchUpdate(
                        3, added=[AddedRequest(0, 1, [100]), AddedRequest(1, None, [100]), AddedRequest(2, 4, [100])]
                    ),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)},
                ),
                (
                    BatchUpdate(3, moved=[(0, 1, Move.SWAP)]),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 6), 2: SlotStep([], 0, 5)},
                ),
                (
                    BatchUpdate(2, removed=[0], moved=[(2, 0, Move.UNIDIRECTIONAL)]),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 7)},
                ),
                (
                    BatchUpdate(3, added=[AddedRequest(2, 0, [3, 100, 4])], moved=[(2, 1, Move.SWAP)]),
                    {0: SlotStep([], 0, 5), 1: SlotStep([], 0, 5), 2: SlotStep([], 0, 5)},
                ),
            ],
            description="A SWAP of tracked slot 0 with untracked slot 1 leaves slot 0 untracked; a removal "
            "is condensed by an UNIDIRECTIONAL move; an added request is swapped in the same update.",
        )
    )
    s += _isolating_budget_vectors()
    s += _forced_phrase_vectors()
    errors = []
    for value in (-2, True, 1.5, "1"):
        errors.append(
            {
                "name": f"invalid-budget-{value!r}",
                "requirements": ["TB-API-2"],
                "start_token_ids": S1,
                "end_token_ids": E1,
                "max_num_reqs": 2,
                "update": BatchUpdate(1, added=[AddedRequest(0, value, [1])]).to_json(),
                "expected_error_field": "budget",
            }
        )
    for field_name, start, end in (("start_token_ids", [], E1), ("end_token_ids", S1, [])):
        errors.append(
            {
                "name": f"empty-{field_name}",
                "requirements": ["TB-API-3"],
                "start_token_ids": start,
                "end_token_ids": end,
                "max_num_reqs": 2,
                "update": None,
                "expected_error_field": field_name,
            }
        )
    for name, update, field_name in (
        ("added-slot-out-of-range", BatchUpdate(1, added=[AddedRequest(2, 1, [1])]), "added index"),
        ("batch-size-too-large", BatchUpdate(3), "batch_size"),
        ("move-from-empty-slot", BatchUpdate(1, moved=[(1, 0, Move.UNIDIRECTIONAL)]), "move from empty slot"),
        ("remove-empty-slot", BatchUpdate(1, removed=[1]), "removed index"),
    ):
        errors.append(
            {
                "name": name,
                "requirements": ["TB-BATCH-4"],
                "start_token_ids": S1,
                "end_token_ids": E1,
                "max_num_reqs": 2,
                "update": update.to_json(),
                "expected_error_field": field_name,
            }
        )
    return {"format": FORMAT_VERSION, "kind": "thinking-budget", "scenarios": s, "errors": errors}


# ---------------------------------------------------------------------------------------------
# Rejection sampling


def _case_json(case: rs.RejectionCase) -> dict:
    out = {
        "target_logits": encode_matrix(case.target_logits),
        "draft_token_ids": case.draft_token_ids.tolist(),
        "num_draft_tokens": case.num_draft_tokens.tolist(),
        "temperature": [encode_float(t) for t in case.temperature],
        "draft_probs": None if case.draft_probs is None else encode_matrix(case.draft_probs),
        "forced_token_ids": None if case.forced_token_ids is None else case.forced_token_ids.tolist(),
        "seeds": None if case.seeds is None else case.seeds.tolist(),
        "positions": None if case.positions is None else case.positions.tolist(),
    }
    return out


def case_from_json(data: dict) -> rs.RejectionCase:
    def matrix(rows):
        return None if rows is None else np.array([[decode_float(v) for v in r] for r in rows])

    return rs.RejectionCase(
        target_logits=matrix(data["target_logits"]),
        draft_token_ids=np.array(data["draft_token_ids"], dtype=np.int64),
        num_draft_tokens=np.array(data["num_draft_tokens"], dtype=np.int64),
        temperature=np.array([decode_float(t) for t in data["temperature"]]),
        draft_probs=matrix(data["draft_probs"]),
        forced_token_ids=None if data["forced_token_ids"] is None else np.array(data["forced_token_ids"]),
        seeds=None if data["seeds"] is None else np.array(data["seeds"], dtype=np.int64),
        positions=None if data["positions"] is None else np.array(data["positions"], dtype=np.int64),
    )


def _exact_case(name, reqs, case: rs.RejectionCase, description="") -> dict:
    tokens, num, _ = rs.sample_case(case)
    return {
        "name": name,
        "description": description,
        "requirements": reqs,
        "case": _case_json(case),
        "expected_token_ids": tokens.tolist(),
        "expected_num_emitted": num.tolist(),
    }


def _dist_json(dist: dict) -> list:
    return [{"emitted": list(key), "probability": encode_float(prob)} for key, prob in sorted(dist.items())]


# A (seed, position) whose acceptance uniform is exactly 0 under the reference draws (RS-RNG-3): found by a search
# over positions for seed 7; such a draw has probability 2**-24 per row.
UNIFORM_ZERO_SEED, UNIFORM_ZERO_POSITION = 7, 10_918_110


def _zero_target_draft_at_uniform_zero() -> dict:
    """A draft whose target probability is exactly 0 (a -inf logit), verified with an acceptance uniform of
    exactly 0: ``u * q(d) < p(d)`` is ``0 < 0``, so the draft is rejected, as RS-PROB-3 demands; a verifier that
    accepts on ``u * q(d) <= p(d)`` emits the masked token."""
    assert rs.rng.uniform(UNIFORM_ZERO_SEED, UNIFORM_ZERO_POSITION) == 0.0
    logits = np.array([[0.3, -np.inf, 0.5, 0.1], [0.2, 0.4, -0.3, 0.0]])
    q = np.array([[0.25, 0.5, 0.25, 0.0]])
    case = rs.RejectionCase(
        logits, [1], [1], [1.0], draft_probs=q, seeds=[UNIFORM_ZERO_SEED], positions=[UNIFORM_ZERO_POSITION]
    )
    _, _, traces = rs.sample_case(case)
    assert traces[0].emitted[0] != 1 and traces[0].sample_margin > 1e-3
    return _exact_case(
        "zero-target-draft-at-uniform-zero",
        ["RS-PROB-3", "RS-RNG-3"],
        case,
        "p(d) = 0 and the acceptance uniform is exactly 0: the draft is rejected (0 < 0 fails) and the residual "
        "sampled.",
    )


def _seed_where(make_case, wanted) -> rs.RejectionCase:
    """The first case ``make_case(seed)`` (seed 1, 2, ...) for which ``wanted(case, oracle tokens)`` holds."""
    for seed in range(1, 10_000):
        case = make_case(seed)
        tokens, _, traces = rs.sample_case(case)
        if wanted(case, tokens) and all(t.sample_margin > 1e-3 for t in traces):
            return case
    raise AssertionError("no seed gives the wanted output")


def _isolating_rejection_vectors() -> list[dict]:
    """Exact vectors whose first requirement is the only reading they separate."""
    rng = np.random.default_rng(20261122)
    z = rng.normal(size=(6, 9)).round(3)
    for row, best in enumerate([2, 5, 0, 7, 3, 8]):
        z[row, best] = 4.0
    out = [
        _exact_case(
            "ragged-layout",
            ["RS-LAYOUT-1", "RS-GREEDY-1"],
            rs.RejectionCase(z, [2, 7, 3], [1, 0, 2], [0.0, 0.0, 0.0]),
            "K = 1, 0, 2: request 1's only row is row 2, request 2's rows are 3 to 5.",
        )
    ]
    neg = -np.inf
    zero_q = _seed_where(
        lambda seed: rs.RejectionCase(
            np.array([[3.0, 0.0, 0.0], [0.0, 1.0, 2.0]]),
            [0],
            [1],
            [1.0],
            draft_probs=np.array([[0.0, 0.5, 0.5]]),
            seeds=[seed],
            positions=[0],
        ),
        lambda case, tokens: tokens[0, 1] == -1 and rs.rng.uniform(int(case.seeds[0]), 0) < 0.7,
    )
    out.append(
        _exact_case(
            "draft-with-zero-q-rejected",
            ["RS-PROB-3", "RS-RNG-3"],
            zero_q,
            "q(d) = 0 rejects the draft although p(d) is 0.9: one token is emitted from the residual.",
        )
    )
    empty = _seed_where(
        lambda seed: rs.RejectionCase(
            np.array([[0.0, 0.0, neg], [0.0, 0.0, 0.0]]),
            [2],
            [1],
            [1.0],
            draft_probs=np.array([[0.5, 0.5, 0.0]]),
            seeds=[seed],
            positions=[0],
        ),
        lambda case, tokens: tokens[0, 0] == 1,
    )
    out.append(
        _exact_case(
            "residual-without-mass-samples-p",
            ["RS-PROB-4", "RS-PROB-3", "RS-RNG-3"],
            empty,
            "p = q = (0.5, 0.5, 0) and the draft 2 has q = 0: the residual is empty, so p is sampled (here 1, "
            "not its argmax 0).",
        )
    )
    return out


def rejection_vectors() -> dict:
    rng = np.random.default_rng(20261121)
    NEG = -np.inf
    exact = []

    def logits_with_argmax(rows, V, argmaxes):
        z = rng.normal(size=(rows, V)).round(3)
        for r, a in enumerate(argmaxes):
            z[r, a] = 5.0
        return z

    # Greedy.
    z = logits_with_argmax(4, 11, [3, 7, 2, 9])
    exact.append(
        _exact_case(
            "greedy-all-accepted",
            ["RS-GREEDY-1", "RS-GREEDY-2", "RS-LAYOUT-1", "RS-LAYOUT-2"],
            rs.RejectionCase(z, [3, 7, 2], [3], [0.0]),
        )
    )
    exact.append(
        _exact_case(
            "greedy-mismatch-at-1",
            ["RS-GREEDY-1", "RS-GREEDY-2"],
            rs.RejectionCase(z, [3, 8, 2], [3], [0.0]),
            "Row 1's argmax is 7, the draft 8: emit 7 and stop; row 2 is never used.",
        )
    )
    tie = np.array([[0.5, 2.0, 2.0, 1.0], [2.0, 0.0, 2.0, 2.0]])
    exact.append(
        _exact_case(
            "greedy-tie-lowest-id",
            ["RS-GREEDY-3"],
            rs.RejectionCase(tie, [2], [1], [0.0]),
            "Row 0 ties ids 1 and 2: the argmax is 1, so draft 2 is rejected.",
        )
    )
    z2 = logits_with_argmax(5, 37, [4, 36, 0, 12, 20])
    exact.append(
        _exact_case(
            "greedy-zero-draft-rows",
            ["RS-ZERO-1", "RS-LAYOUT-2", "RS-INPUT-1"],
            rs.RejectionCase(z2, [4, 36], [0, 2, 0], [0.0, 0.0, 0.0]),
            "Three requests, K = 0, 2, 0, V = 37 (not a multiple of any block).",
        )
    )
    masked = np.full((3, 9), NEG)
    masked[:, 2] = 0.0
    masked[0, 5] = 1.0
    masked[1, 6] = 0.5
    exact.append(
        _exact_case(
            "greedy-neg-inf-mask",
            ["RS-INPUT-2", "RS-GREEDY-1"],
            rs.RejectionCase(masked, [5, 6], [2], [0.0]),
            "-inf entries are a mask, not an error.",
        )
    )
    z3 = logits_with_argmax(4, 13, [1, 2, 3, 4])
    exact.append(
        _exact_case(
            "forced-draft-row",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3, [1, 9, 3], [3], [0.0], forced_token_ids=[-1, 6, -1, -1]),
            "Row 1 is forced to 6: the draft 9 is rejected and 6 emitted.",
        )
    )
    exact.append(
        _exact_case(
            "forced-row-accepts-equal-draft",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3, [1, 6, 3], [3], [1.0], forced_token_ids=[-1, 6, 12, -1], seeds=[7], positions=[100]),
        )
    )
    exact.append(
        _exact_case(
            "forced-bonus-row",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3[:1], [], [0], [0.8], forced_token_ids=[11], seeds=[3], positions=[0]),
        )
    )
    # Probabilistic, exact under the reference draws (RS-RNG-3).
    V = 16
    zp = rng.normal(size=(7, V)).round(3)
    q = rng.dirichlet(np.ones(V), size=4)
    drafts = [int(rng.choice(V, p=q[j])) for j in range(4)]
    exact.append(
        _exact_case(
            "probabilistic-seeded-mixed-batch",
            ["RS-RNG-3", "RS-MIXED-1", "RS-PROB-1", "RS-PROB-2"],
            rs.RejectionCase(
                zp,
                drafts,
                [3, 1, 0],
                [0.7, 0.0, 1.3],
                draft_probs=q,
                seeds=[11, 12, 13],
                positions=[5, 40, 7],
            ),
            "Seeded requests under the reference counter-based draws.",
        )
    )
    exact.append(
        _exact_case(
            "one-hot-seeded",
            ["RS-RNG-3", "RS-ONEHOT-1"],
            rs.RejectionCase(zp[:5], drafts, [4], [1.0], seeds=[99], positions=[0]),
        )
    )

    exact.append(_zero_target_draft_at_uniform_zero())
    exact += _isolating_rejection_vectors()
    # Exact output distributions for fixed drafts.
    distributions = []

    def dist_entry(name, reqs, p_rows, q_rows, drafts, description=""):
        return {
            "name": name,
            "description": description,
            "requirements": reqs,
            "p": encode_matrix(p_rows),
            "q": None if q_rows is None else encode_matrix(q_rows),
            "drafts": drafts,
            "expected_distribution": _dist_json(rs.output_distribution(p_rows, q_rows, drafts)),
        }

    p = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    qq = np.array([[0.1, 0.6, 0.3, 0.0], [0.4, 0.3, 0.2, 0.1]])
    distributions.append(dist_entry("residual", ["RS-PROB-1", "RS-PROB-2"], p, qq, [1, 0]))
    distributions.append(
        dist_entry(
            "draft-with-zero-target",
            ["RS-PROB-3"],
            np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]]),
            np.array([[0.2, 0.2, 0.6]]),
            [2],
            "p(d) = 0: the draft is never emitted.",
        )
    )
    distributions.append(
        dist_entry(
            "draft-with-zero-q",
            ["RS-PROB-3"],
            np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]]),
            np.array([[0.5, 0.0, 0.5]]),
            [1],
            "q(d) = 0 rejects the draft; the residual is sampled.",
        )
    )
    distributions.append(
        dist_entry(
            "residual-without-mass",
            ["RS-PROB-4"],
            np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]),
            np.array([[0.5, 0.5, 0.0]]),
            [2],
            "q(d) = 0 with p = q elsewhere: the residual is empty, so p is sampled.",
        )
    )
    distributions.append(dist_entry("one-hot", ["RS-ONEHOT-1"], p, None, [0, 3]))
    # Drafts sampled from q: per-position marginals and the accepted-length law.
    sampled = []
    for name, p_rows, q_rows, reqs in (
        (
            "reverse-ranked",
            np.array([[0.5, 0.25, 0.15, 0.1]] * 3),
            np.array([[0.1, 0.15, 0.25, 0.5]] * 2),
            ["RS-PROB-5", "RS-PROB-6"],  # q is what the drafts are drawn from: RS-ONEHOT-2's premise, not judged
        ),
        (
            "disjoint",
            np.array([[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0.25] * 4]),
            np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 0, 0]]),
            ["RS-PROB-5", "RS-PROB-6"],
        ),
        (
            "p-equals-q",
            np.array([[0.4, 0.3, 0.2, 0.1]] * 3),
            np.array([[0.4, 0.3, 0.2, 0.1]] * 2),
            ["RS-PROB-5", "RS-PROB-6"],
        ),
    ):
        dist = rs.distribution_with_sampled_drafts(p_rows, q_rows)
        marginals = [rs.position_marginals(dist, j, p_rows.shape[1])[0] for j in range(len(p_rows))]
        betas = [rs.overlap(p_rows[j], q_rows[j]) for j in range(len(q_rows))]
        lengths = np.zeros(len(q_rows) + 1)
        for key, prob in dist.items():
            lengths[len(key) - 1] += prob
        sampled.append(
            {
                "name": name,
                "requirements": reqs,
                "p": encode_matrix(p_rows),
                "q": encode_matrix(q_rows),
                "expected_position_marginals": encode_matrix(marginals),
                "expected_accepted_length": [encode_float(x) for x in lengths],
                "closed_form_accepted_length": [encode_float(x) for x in rs.accepted_length_distribution(betas)],
            }
        )
    # Invalid input.
    errors = []
    base = rng.normal(size=(3, 6)).round(3)

    def error(name, reqs, field_name, **changes):
        kwargs = dict(
            target_logits=base.copy(),
            draft_token_ids=[1, 2],
            num_draft_tokens=[2],
            temperature=[1.0],
            seeds=[1],
            positions=[0],
        )
        kwargs.update(changes)
        case = rs.RejectionCase(**kwargs)
        return {
            "name": name,
            "requirements": reqs,
            "case": _case_json(case),
            "expected_error_field": field_name,
        }

    nan = base.copy()
    nan[1, 3] = np.nan
    pinf = base.copy()
    pinf[0, 0] = np.inf
    empty = base.copy()
    empty[2, :] = NEG
    errors += [
        error("nan-logit", ["RS-INPUT-3"], "target_logits", target_logits=nan),
        error("pos-inf-logit", ["RS-INPUT-3"], "target_logits", target_logits=pinf),
        error("row-without-finite-logit", ["RS-INPUT-3"], "target_logits", target_logits=empty),
        error(
            "negative-draft-prob",
            ["RS-INPUT-4"],
            "draft_probs",
            draft_probs=np.array([[1.2, -0.2, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]),
        ),
        error(
            "draft-probs-not-normalised",
            ["RS-INPUT-4"],
            "draft_probs",
            draft_probs=np.array([[0.5, 0.4, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]),
        ),
        error("placeholder-draft", ["RS-INPUT-5"], "draft_token_ids", draft_token_ids=[1, -1]),
        error("draft-id-equal-to-V", ["RS-INPUT-5"], "draft_token_ids", draft_token_ids=[6, 1]),
        error("forced-id-equal-to-V", ["RS-INPUT-5"], "forced_token_ids", forced_token_ids=[-1, 6, -1]),
        error("negative-temperature", ["RS-INPUT-5"], "temperature", temperature=[-0.5]),
    ]
    return {
        "format": FORMAT_VERSION,
        "kind": "rejection",
        "exact": exact,
        "distributions": distributions,
        "sampled_drafts": sampled,
        "errors": errors,
    }


# ---------------------------------------------------------------------------------------------
# Counting


def counting_vectors() -> dict:
    rows = [
        ("accepted-two-of-three", [5, 6, 9, -1], 11, ["AC-COUNT-1"]),
        ("all-accepted", [5, 6, 7, 9], 11, ["AC-COUNT-1"]),
        ("zero-draft", [9], 11, ["AC-COUNT-1"]),
        ("discarded", [-1, -1, -1], 11, ["AC-COUNT-4"]),
        ("hole", [5, -1, 7, -1], 11, ["AC-COUNT-2"]),
        ("out-of-vocab", [5, 11, -1], 11, ["AC-COUNT-3"]),
    ]
    counts = []
    for name, row, V, reqs in rows:
        problems = ac.validate_rows([row], V)
        counts.append(
            {
                "name": name,
                "requirements": reqs,
                "row": row,
                "vocab_size": V,
                "expected_num_emitted": ac.num_emitted(row),
                "expected_problems": sorted({p.kind for p in problems}),
            }
        )
    with_eos = [
        (3, [5, 6, 9, -1], None),
        (3, [9, -1, -1, -1], None),
        (0, [4], None),
        (2, [5, 2, 8], None),
        (3, [5, 2, 7, 8], None),
        (1, [-1, -1], None),
        (4, [1, 2, 3, 4, 5], None),
    ]
    # max_tokens or a stop string trims an accepted run (commit limits), beside an end token among the
    # request's stop_token_ids (7) that a limit cuts off before it is reached
    with_stops = [
        (3, [5, 6, 9, 4], 2),
        (3, [5, 6, 9, -1], 3),
        (2, [5, 6, 8], 1),
        (4, [1, 7, 3, 4, 5], 4),
        (4, [1, 3, 4, 7, 5], 3),
        (2, [9, -1, -1], 1),
        (0, [4], 1),
    ]
    metric_vectors = [
        _metrics_vector(
            "metrics-with-eos",
            ["AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-COUNT-4"],
            [2],
            with_eos,
        ),
        _metrics_vector("metrics-with-stops", ["AC-STOP-1", "AC-METRIC-4", "AC-METRIC-2"], [7], with_stops),
    ]
    return {"format": FORMAT_VERSION, "kind": "counting", "rows": counts, "metrics": metric_vectors}


def _metrics_vector(name: str, requirements: list[str], eos_token_ids: list[int], steps) -> dict:
    """A metrics vector over ``(K, row, commit_limit)`` steps: per-step accepted drafts and the aggregate
    metrics over committed tokens (AC-METRIC-4, AC-STOP-1)."""
    metrics = ac.AcceptanceMetrics(max_positions=4)
    per_step = [metrics.observe(k, row, eos_token_ids, limit) for k, row, limit in steps]
    return {
        "name": name,
        "requirements": requirements,
        "eos_token_ids": eos_token_ids,
        "steps": [{"num_draft_tokens": k, "row": row, "commit_limit": limit} for k, row, limit in steps],
        "expected_accepted_per_step": per_step,
        "expected": {
            "num_drafts": metrics.num_drafts,
            "num_draft_tokens": metrics.num_draft_tokens,
            "num_accepted_tokens": metrics.num_accepted_tokens,
            "num_discarded": metrics.num_discarded,
            "acceptance_rate": encode_float(metrics.acceptance_rate),
            "mean_acceptance_length": encode_float(metrics.mean_acceptance_length),
            "accepted_per_position": metrics.accepted_per_position,
            "per_position_rates": [encode_float(x) for x in metrics.per_position_rates()],
        },
    }


GENERATORS = {
    "thinking-budget": budget_vectors,
    "rejection": rejection_vectors,
    "counting": counting_vectors,
}


def entry_preconditions(kind: str, group: str, entry: dict) -> list[str]:
    """What a vector needs of an engine's input domain (``harness.contract.PRECONDITIONS``), read off its
    content: an engine whose contract excludes one is not run on the vector."""
    if kind == "thinking-budget":
        found = contract.budget_preconditions(entry)
    elif kind == "rejection" and group == "exact":
        case = case_from_json(entry["case"])
        found = contract.rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
    elif kind == "rejection" and group == "distributions" and entry["q"] is not None:
        q = [[decode_float(v) for v in row] for row in entry["q"]]
        found = contract.rejection_preconditions(entry["drafts"], [len(entry["drafts"])], q)
    elif kind == "counting" and group == "rows":
        found = contract.row_preconditions([entry["row"]], entry["vocab_size"])
    else:  # drafts sampled from q, invalid input judged under input-validation, metrics over well-formed rows
        found = set()
    return sorted(found)


def with_preconditions(kind: str, document: dict) -> dict:
    """``document`` with every entry that needs something of the input domain stating it (``preconditions``)."""
    for group, entries in document.items():
        if isinstance(entries, list):
            for entry in entries:
                needs = entry_preconditions(kind, group, entry)
                if needs:
                    entry["preconditions"] = needs
    return document


def render(kind: str) -> str:
    return json.dumps(with_preconditions(kind, GENERATORS[kind]()), indent=1, allow_nan=False) + "\n"


def write_all(directory: Path | None = None) -> list[Path]:
    directory = directory or vectors_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in GENERATORS:
        path = directory / f"{kind}.json"
        path.write_text(render(kind))
        paths.append(path)
    return paths


def stale(directory: Path | None = None) -> list[str]:
    """Kinds whose checked-in file differs from what the oracle generates now."""
    directory = directory or vectors_dir()
    out = []
    for kind in GENERATORS:
        path = directory / f"{kind}.json"
        if not path.exists() or path.read_text() != render(kind):
            out.append(kind)
    return out
