"""Thinking-budget scenarios as data: how a family is drawn (``BudgetFamily``), one drawn scenario
(``BudgetScenario``) and why a scenario is unreachable for a real engine (``unreachable``).

A scenario is a program: the markers, the scope, ``max_num_reqs`` and, per step, an optional
``BatchUpdate`` and what each live slot proposes (``SlotStep``: drafts, how many a sampler accepts,
the token it emits where the row is free). ``specconform.harness.vectors.budget_scenario`` runs a program
through the oracle and records it in the golden-vector format, so a generated case, its minimal
reproduction and a checked-in vector are the same kind of object.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconform.specs.interface import BatchUpdate, Move

from ...vectors import SlotStep, budget_scenario

PROMPT_KINDS = ("plain", "open", "partial")


@dataclass(frozen=True)
class BudgetFamily:
    """How a family of scenarios is drawn: token ids ``0..alphabet-1`` (small, so that markers recur
    and overlap), marker lengths up to ``marker_lengths``, ``max_num_reqs`` in the range
    ``max_num_reqs``, up to ``steps`` steps and ``max_spec`` drafts per slot."""

    marker_lengths: tuple[int, int] = (1, 1)
    alphabet: int = 6
    disjoint_markers: bool = True
    drafts: bool = False
    batch_ops: bool = False
    prompt: str = "plain"
    budgets: tuple = (None, -1, 0, 1, 2, 3, 8)
    steps: int = 40
    scenarios: int = 30
    max_num_reqs: tuple[int, int] = (1, 4)
    max_spec: int = 3
    phrase: int = 0  # > 0: a forced end sequence F = P + E with a transition phrase P of 1..phrase ids (TB-END-1)
    other_end: int = 0  # > 0: another accepted end marker of 1..other_end ids (TB-END-3)
    # reachable scenarios judged before the drawn ones: shapes the strategies reach rarely (``EXAMPLES``)
    examples: tuple[BudgetScenario, ...] = ()

    def __post_init__(self):
        if self.prompt not in PROMPT_KINDS:
            raise ValueError(f"prompt must be one of {PROMPT_KINDS}; got {self.prompt!r}")
        if self.disjoint_markers and self.alphabet <= self.marker_lengths[0]:
            raise ValueError(
                f"alphabet {self.alphabet} leaves no id for E beside a start marker of length {self.marker_lengths[0]}"
            )
        for index, example in enumerate(self.examples):
            why = unreachable(example, self.disjoint_markers)
            lengths = (len(example.start), len(example.end))
            if why or any(n > most for n, most in zip(lengths, self.marker_lengths)):
                raise ValueError(
                    f"examples[{index}] is not a scenario of this family: "
                    f"{why or f'markers of lengths {lengths} exceed {self.marker_lengths}'}"
                )


@dataclass(frozen=True)
class BudgetScenario:
    """One drawn scenario. ``steps[i] = (update or None, slot_steps)`` with one ``SlotStep`` per live
    slot ``0..batch_size-1``."""

    start: tuple[int, ...]
    end: tuple[int, ...]
    scope: str
    max_num_reqs: int
    steps: tuple[tuple[BatchUpdate | None, tuple[SlotStep, ...]], ...]
    forced: tuple[int, ...] | None = None  # the forced end sequence F when it is not E (TB-END-1)
    others: tuple[tuple[int, ...], ...] = ()  # end markers accepted beside E (TB-END-3)

    def vector(self, name: str, requirements: list[str], description: str = "") -> dict:
        """The scenario run through the oracle, in the golden-vector format (``specs/vectors``)."""
        return budget_scenario(
            name,
            list(requirements),
            list(self.start),
            list(self.end),
            [(update, dict(enumerate(slots))) for update, slots in self.steps],
            self.scope,
            self.max_num_reqs,
            description,
            forced_token_ids=None if self.forced is None else list(self.forced),
            other_end_token_ids=[list(m) for m in self.others],
        )

    @classmethod
    def from_vector(cls, vector: dict) -> BudgetScenario | None:
        """The scenario a thinking-budget vector records: each live slot's drafts, and as what it proposes the run it
        committed (its drafts accepted up to the first committed token that differs, then that token). A checked-in
        vector, a check's own case and a generated scenario are then shrunk and attributed alike; None where a slot
        committed nothing (a discarded row, which a proposal cannot express)."""
        steps = []
        for step in vector["steps"]:
            update = None if step["update"] is None else BatchUpdate.from_json(step["update"])
            proposals, offset = [], 0
            for k, row in zip(step["num_draft_tokens"], step["sampled_token_ids"]):
                drafts = list(step["draft_token_ids"][offset : offset + k])
                offset += k
                committed = [t for t in row if t != -1]
                if not committed:
                    return None
                accept = next((j for j, t in enumerate(committed[:-1]) if j >= k or t != drafts[j]), len(committed) - 1)
                proposals.append(SlotStep(drafts, accept, committed[accept]))
            steps.append((update, tuple(proposals)))
        others = tuple(tuple(m) for m in vector.get("other_end_token_ids") or ())
        forced = vector.get("forced_token_ids")
        return cls(
            tuple(vector["start_token_ids"]),
            tuple(vector["end_token_ids"]),
            vector["scope"],
            vector["max_num_reqs"],
            tuple(steps),
            None if forced is None else tuple(forced),
            others,
        )

    @property
    def size(self) -> int:
        """Steps + requests + removals + moves + drafts + prompt tokens: what a shrinker lowers."""
        total = len(self.steps)
        for update, slots in self.steps:
            total += sum(len(s.drafts) for s in slots)
            if update is not None:
                total += len(update.removed) + len(update.moved)
                total += sum(1 + len(a.prompt_token_ids) for a in update.added)
        return total


def unreachable(scenario: BudgetScenario, disjoint_markers: bool = True) -> str | None:
    """Why no real engine reaches ``scenario`` (shared marker ids, drafts before any output, a batch
    whose live slots are not ``[0, batch_size)``), or None."""
    if disjoint_markers and set(scenario.start) & set(scenario.end):
        return f"S={list(scenario.start)} and E={list(scenario.end)} share ids"
    ages: dict[int, int] = {}
    for index, (update, slot_steps) in enumerate(scenario.steps):
        if update is not None:
            for s in update.removed:
                ages.pop(s, None)
            for a in update.added:
                ages[a.index] = 0
            for src, dst, kind in update.moved:
                if kind is Move.SWAP:
                    ages[src], ages[dst] = ages.get(dst, 0), ages.get(src, 0)
                else:
                    ages[dst] = ages.pop(src, 0)
            if sorted(ages) != list(range(update.batch_size)):
                return f"step {index}: live slots {sorted(ages)} are not [0, {update.batch_size})"
        if not ages:
            return f"step {index}: a decode step without requests"
        if len(slot_steps) != len(ages):
            return f"step {index}: {len(slot_steps)} slot proposals for {len(ages)} live slots"
        for slot, proposal in enumerate(slot_steps):
            if proposal.drafts and ages[slot] == 0:
                return f"step {index}: slot {slot} proposes drafts before its request has any output"
        ages = {s: age + 1 for s, age in ages.items()}
    return None
