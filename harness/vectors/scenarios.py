"""Budget scenarios in the golden-vector format: a program of batch updates, drafts and committed tokens run
beside the oracle (``budget_scenario``), which the generated cases depend on as the golden vectors do."""

from __future__ import annotations

from dataclasses import dataclass

from specconform.specs.interface import BatchUpdate

from ..oracle import budget as tb


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
