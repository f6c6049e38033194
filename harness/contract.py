"""The engine contract: which inputs an engine's own callers can hand it, and which values it produces.

A conformance FAIL is worth publishing only if the engine meets its case in normal operation. Some
requirements judge inputs that a given engine's callers never produce: vLLM's drafters sample each draft
from the ``q`` they hand over, so no draft has ``q(draft) = 0``; its scheduler never names an emptied slot.
A profile declares such facts as its ``contract``; every case states the ``preconditions`` it needs of the
input domain; a case whose precondition the contract excludes is not run against that engine, and a
requirement only such cases reach reads NOT_APPLICABLE (specs/INTERPRETING.md, "The engine contract").

Likewise a profile names the observables its adapter ``derived`` (computed itself instead of reading them
from the engine); a requirement judged only on derived values reads NOT_APPLICABLE for that engine, because
its verdict would judge the adapter.

The classifiers below read a case's content, so a golden vector's stated preconditions are checked
against what it holds (``tests/unit/test_contract.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from specconform.specs.interface import BatchUpdate, Move

# precondition -> what such a case holds
PRECONDITIONS = {
    "draft-outside-q-support": "a draft whose draft probability q(draft) is 0 (or an empty residual, which needs one)",
    "invalid-batch-update": "a batch update naming an emptied slot, a slot past max_num_reqs or a batch above it",
    "drafts-before-output": "drafts proposed for a request before its first output token",
    "malformed-row": "an output row with a hole in its prefix or an id outside the vocabulary",
}
# contract declaration -> (the precondition it excludes, why the engine never meets such a case)
CONTRACT = {
    "drafts-sampled-from-q": ("draft-outside-q-support", "its drafters sample every draft from the q they hand over"),
    "scheduler-batch-updates": ("invalid-batch-update", "its batch updates come from its own scheduler"),
    "drafts-after-output": ("drafts-before-output", "it proposes drafts only after a request's first output token"),
    "rows-from-own-sampler": ("malformed-row", "it counts only rows its own sampler emitted"),
}
# what an adapter may declare it derived instead of reading it from the engine
OBSERVABLES = (
    "num_emitted",  # count_emitted's counts
    "broken_prefix",  # count_emitted's flag of a row with a hole
    "out_of_vocab",  # count_emitted's flag of a row with an id outside the vocabulary
    "acceptance_rate",  # acceptance_metrics
    "mean_acceptance_length",
    "accepted_per_position",
    "per_position_rates",
    "batch_moves",  # where the budget state of a moved or swapped request goes (TB-BATCH-2, TB-BATCH-3)
    "draw_offsets",  # where a seeded request's draws start in its random stream (an RNG offset handed over)
)


def validate_contract(declared: Iterable[str], where: str) -> frozenset[str]:
    """``declared`` as a set, or a ``ValueError`` naming ``where`` and the unknown declaration."""
    declared = frozenset(declared)
    unknown = sorted(declared - set(CONTRACT))
    if unknown:
        raise ValueError(f"{where}: contract declares {unknown}; known: {sorted(CONTRACT)}")
    return declared


def validate_observables(derived: Iterable[str], where: str) -> frozenset[str]:
    derived = frozenset(derived)
    unknown = sorted(derived - set(OBSERVABLES))
    if unknown:
        raise ValueError(f"{where}: derived names {unknown}; known observables: {list(OBSERVABLES)}")
    return derived


def outside(contract: Iterable[str], preconditions: Iterable[str]) -> str | None:
    """Why a case with ``preconditions`` lies outside an engine's ``contract`` (None: inside it)."""
    for declaration in sorted(contract):
        excluded, why = CONTRACT[declaration]
        if excluded in preconditions:
            return f"{PRECONDITIONS[excluded]}; the engine declares {declaration}: {why}"
    return None


def derived_only(observables: Sequence[str], derived: Iterable[str]) -> str | None:
    """Why a requirement judged on ``observables`` cannot be judged (None: the engine produces one of them)."""
    derived = set(derived)
    if observables and all(o in derived for o in observables):
        return f"judged only on {', '.join(observables)}, which the engine's adapter derives rather than the engine"
    return None


# ---------------------------------------------------------------------------------------------
# Classifiers: the preconditions a case needs, read off its content


def rejection_preconditions(draft_token_ids, num_draft_tokens, draft_probs) -> set[str]:
    """A rejection case (``draft_token_ids [ΣK]`` int, ``num_draft_tokens [B]`` int, ``draft_probs [ΣK, V]``
    float or None) needs ``draft-outside-q-support`` when a draft has ``q(draft) = 0``. Without draft
    probabilities ``q`` is one-hot at the draft, which is always in its support."""
    if draft_probs is None or len(draft_token_ids) == 0:
        return set()
    q = np.asarray(draft_probs, dtype=np.float64)
    drafts = np.asarray(draft_token_ids, dtype=np.int64)
    valid = (drafts >= 0) & (drafts < q.shape[1])
    at_draft = q[np.arange(len(drafts))[valid], drafts[valid]]
    return {"draft-outside-q-support"} if (at_draft <= 0).any() else set()


def rule_preconditions(q_row, draft: int) -> set[str]:
    """A fixed-draft rule case (``q_row [V]`` float or None, one draft)."""
    return rejection_preconditions([draft], [1], None if q_row is None else [q_row])


class _Batch:
    """Which slots hold a request, and how many output tokens each has committed."""

    def __init__(self, max_num_reqs: int):
        self.max_num_reqs = max_num_reqs
        self.output: dict[int, int] = {}

    def apply(self, update: BatchUpdate) -> bool:
        """Apply ``update``; False when a scheduler could not have produced it."""
        valid = update.batch_size <= self.max_num_reqs
        for slot in update.removed:
            valid &= slot in self.output
            self.output.pop(slot, None)
        for added in update.added:
            valid &= 0 <= added.index < self.max_num_reqs
            self.output[added.index] = 0
        for src, dst, kind in update.moved:
            valid &= src in self.output and 0 <= dst < self.max_num_reqs
            if kind is Move.SWAP:
                valid &= dst in self.output
                self.output[src], self.output[dst] = self.output.get(dst, 0), self.output.get(src, 0)
            else:
                self.output[dst] = self.output.pop(src, 0)
        return bool(valid)


def budget_preconditions(vector: dict) -> set[str]:
    """A thinking-budget vector (a ``scenarios`` entry, or an ``errors`` entry with one update) needs
    ``invalid-batch-update`` when an update is one no scheduler produces, and ``drafts-before-output`` when a
    slot proposes drafts before it has committed a token."""
    found: set[str] = set()
    batch = _Batch(vector["max_num_reqs"])
    if "steps" not in vector:  # an errors entry: one update onto an empty batch
        update = vector.get("update")
        if update is not None and not batch.apply(BatchUpdate.from_json(update)):
            found.add("invalid-batch-update")
        return found
    for step in vector["steps"]:
        if step["update"] is not None and not batch.apply(BatchUpdate.from_json(step["update"])):
            found.add("invalid-batch-update")
        for slot, k in enumerate(step["num_draft_tokens"]):
            if k and not batch.output.get(slot, 0):
                found.add("drafts-before-output")
        for slot, row in enumerate(step["sampled_token_ids"]):
            batch.output[slot] = batch.output.get(slot, 0) + sum(1 for t in row if t != -1)
    return found


def row_preconditions(rows: Sequence[Sequence[int]], vocab_size: int) -> set[str]:
    """Output rows ``[B, W]`` (``-1`` padded) need ``malformed-row`` when one has a hole or an id outside
    ``[0, vocab_size)``."""
    for row in rows:
        real = [t != -1 for t in row]
        if any(real[i + 1] and not real[i] for i in range(len(real) - 1)):
            return {"malformed-row"}
        if any(t != -1 and not 0 <= t < vocab_size for t in row):
            return {"malformed-row"}
    return set()


# ---------------------------------------------------------------------------------------------
# The guard: whatever a check does, an engine is never handed a case outside its contract


class OutsideContract(BaseException):  # noqa: N818 (an outcome, like SystemExit)
    """A check handed the engine a case outside its contract. A ``BaseException``, so that no check's
    ``except Exception`` can turn it into a failure of the engine; the runner's engine process records the
    check NOT_APPLICABLE with this message."""


class ContractGuard:
    """``engine`` with its ``rejection_sample`` refusing cases outside ``engine.profile.contract``
    (``OutsideContract``); every other attribute is the engine's own."""

    def __init__(self, engine):
        self._engine = engine

    def __getattr__(self, name: str):
        return getattr(self._engine, name)

    def rejection_sample(self, case):
        needs = rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
        why = outside(self._engine.profile.contract, needs)
        if why:
            raise OutsideContract(f"a case of this check lies outside the engine's contract: {why}")
        return self._engine.rejection_sample(case)


def guarded(engine):
    """``engine`` behind a ``ContractGuard`` when its profile declares a contract on rejection inputs."""
    if "drafts-sampled-from-q" in engine.profile.contract and hasattr(engine, "rejection_sample"):
        return ContractGuard(engine)
    return engine
