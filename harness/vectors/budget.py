"""The thinking-budget golden vectors (``specs/vectors/thinking-budget.json``)."""

from __future__ import annotations

from specs.interface import AddedRequest, BatchUpdate, Move

from .codec import FORMAT_VERSION
from .scenarios import SlotStep, _sequential, budget_scenario

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
