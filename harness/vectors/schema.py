"""The golden vectors' source files: what ``harness/vectors/golden/<kind>/<group>.yaml`` may hold, as pydantic models.

Each file holds the inputs of one group of a published vector file (``specs/vectors/<kind>.json``); the generators
(``budget``, ``rejection``, ``counting``) read it and add what the oracle computes. A key that no model names is an
error that names the key and the file (``specconform.harness.schemas.parse``).

To add a golden vector: add an entry to the group's file, run ``specconform vectors --write`` and review the diff of
``specs/vectors/``; ``specconform vectors`` (and the test suite) checks the published files are current.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, model_validator

from specconform.specs.interface import AddedRequest, BatchUpdate, Move, RejectionCase

from ..schemas import Strict, parse

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def read(kind: str, group: str, model: type[Strict], directory: Path | None = None):
    """``<directory>/<kind>/<group>.yaml`` (default: the package's ``golden/``) read as ``model``; a ``ValueError``
    names the file and each key that is unknown, missing or of the wrong value."""
    path = (directory or GOLDEN_DIR) / kind / f"{group}.yaml"
    return parse(model, yaml.safe_load(path.read_text()), f"golden vector file {str(path)!r}")


# ---------------------------------------------------------------------------------------------
# Thinking budget (specs/vectors/thinking-budget.json)


class Added(Strict):
    index: int
    budget: Any = Field(description="an int, or null (untracked); error vectors hold invalid values (TB-API-2)")
    prompt_token_ids: list[int]


class Update(Strict):
    """A ``specconform.specs.interface.BatchUpdate``: applied removed → added → moved (TB-BATCH-1)."""

    batch_size: int
    removed: list[int] = []
    added: list[Added] = []
    moved: list[tuple[int, int, Move]] = Field([], description="[src, dst, SWAP or UNIDIRECTIONAL]")

    def batch_update(self) -> BatchUpdate:
        added = [AddedRequest(a.index, a.budget, a.prompt_token_ids) for a in self.added]
        return BatchUpdate(self.batch_size, removed=self.removed, added=added, moved=self.moved)


class SlotProposal(Strict):
    """What a slot proposes in a step (``specconform.harness.vectors.SlotStep``)."""

    drafts: list[int] = []
    accept: int = Field(0, description="how many drafts the sampler would accept")
    free_token: int = Field(description="the token the sampler emits after them where the row is free")


class Step(Strict):
    update: Update | None = None
    slots: dict[int, SlotProposal] = Field(description="the live slots' proposals, by slot")


class Scenario(Strict):
    """A budget scenario run beside the oracle: either ``steps``, or one request (``prompt_token_ids``, ``budget``)
    that proposes one token a step (``proposals``) with no drafts."""

    name: str
    description: str = ""
    requirements: list[str]
    start_token_ids: list[int]
    end_token_ids: list[int]
    scope: Literal["request", "section"] = "request"
    forced_token_ids: list[int] | None = Field(None, description="a forced end sequence other than E (TB-END-1)")
    other_end_token_ids: list[list[int]] | None = Field(None, description="end markers accepted beside E (TB-END-3)")
    max_num_reqs: int | None = Field(None, description="default: 1 with proposals, 4 with steps")
    prompt_token_ids: list[int] | None = None
    budget: int | None = None
    proposals: list[int] | None = None
    steps: list[Step] | None = None

    @model_validator(mode="after")
    def _steps_or_one_request(self):
        one_request = (self.prompt_token_ids, self.budget, self.proposals)
        if self.steps is None and None in one_request:
            raise ValueError("a scenario needs steps, or prompt_token_ids, budget and proposals")
        if self.steps is not None and any(v is not None for v in one_request):
            raise ValueError("a scenario with steps takes no prompt_token_ids, budget or proposals")
        return self


class ScenarioFile(Strict):
    vectors: list[Scenario]


class BudgetError(Strict):
    """Invalid input the batch rejects with an error naming ``expected_error_field`` (TB-API-2, TB-API-3,
    TB-BATCH-4)."""

    name: str
    requirements: list[str]
    start_token_ids: list[int]
    end_token_ids: list[int]
    max_num_reqs: int
    update: Update | None
    expected_error_field: str


class BudgetErrorFile(Strict):
    vectors: list[BudgetError]


# ---------------------------------------------------------------------------------------------
# Rejection sampling (specs/vectors/rejection.json)


class CaseFields(Strict):
    """A ``RejectionCase``'s fields (the canonical ragged layout, RS-LAYOUT-1), each optional: a replacement."""

    target_logits: list[list[float]] | None = Field(None, description="[sum(K_i + 1), V]; -.inf is a mask")
    draft_token_ids: list[int] | None = Field(None, description="[sum(K_i)]")
    num_draft_tokens: list[int] | None = Field(None, description="[B]")
    temperature: list[float] | None = Field(None, description="[B]; 0 is greedy")
    draft_probs: list[list[float]] | None = Field(None, description="[sum(K_i), V]; absent: one-hot drafts")
    forced_token_ids: list[int] | None = Field(None, description="[sum(K_i + 1)]; -1 is free")
    seeds: list[int] | None = Field(None, description="[B]")
    positions: list[int] | None = Field(None, description="[B]")
    seeded: list[bool] | None = Field(None, description="[B]; false where a request has no seed; absent: all seeded")


class Case(CaseFields):
    """A whole ``RejectionCase``."""

    target_logits: list[list[float]]
    draft_token_ids: list[int]
    num_draft_tokens: list[int]
    temperature: list[float]

    def rejection_case(self, **replace) -> RejectionCase:
        return RejectionCase(**{**self.model_dump(), **replace})


class SeedSearch(Strict):
    """``seeds`` is the first of 1, 2, ... under which the oracle emits ``token`` at ``[row, column]`` (and, with
    ``uniform_below``, request 0's acceptance uniform at its position is below it), every sample clear of a
    tie by more than 1e-3."""

    row: int
    column: int
    token: int
    uniform_below: float | None = None


class Premise(Strict):
    """What a vector's meaning rests on, asserted when it is generated."""

    acceptance_uniform: float | None = Field(None, description="request 0's reference draw at its seed and position")
    draft_rejected: bool = Field(False, description="request 0's first draft is not emitted, by a clear margin")


class ExactVector(Strict):
    name: str
    description: str = ""
    requirements: list[str]
    case: Case
    seed_search: SeedSearch | None = None
    premise: Premise | None = None


class ExactFile(Strict):
    vectors: list[ExactVector]


class DistributionVector(Strict):
    """The exact output distribution for fixed drafts under target ``p`` and draft ``q`` (absent: one-hot)."""

    name: str
    description: str = ""
    requirements: list[str]
    p: list[list[float]] = Field(description="[K + 1, V]")
    q: list[list[float]] | None = Field(None, description="[K, V]")
    drafts: list[int]


class DistributionFile(Strict):
    vectors: list[DistributionVector]


class SampledDraftsVector(Strict):
    """Drafts sampled from ``q``: per-position marginals and the accepted-length law."""

    name: str
    requirements: list[str]
    p: list[list[float]] = Field(description="[K + 1, V]")
    q: list[list[float]] = Field(description="[K, V]")


class SampledDraftsFile(Strict):
    vectors: list[SampledDraftsVector]


class LogitEdit(Strict):
    row: int
    column: int | None = Field(None, description="absent: the whole row")
    value: float


class RejectionError(Strict):
    """The file's ``base`` case with ``set_logits`` and ``replace`` applied, which an engine must reject naming
    ``expected_error_field``."""

    name: str
    requirements: list[str]
    set_logits: list[LogitEdit] = []
    replace: CaseFields = CaseFields()
    expected_error_field: str


class RejectionErrorFile(Strict):
    base: Case = Field(description="a valid case")
    vectors: list[RejectionError]


# ---------------------------------------------------------------------------------------------
# Accepted-token counting (specs/vectors/counting.json)


class CountingRow(Strict):
    """One output row (``-1``-padded) and its vocabulary size: the generator adds how many tokens it emits and the
    problems it has (AC-COUNT-*)."""

    name: str
    requirements: list[str]
    row: list[int]
    vocab_size: int


class CountingRowsFile(Strict):
    vectors: list[CountingRow]


class MetricsStep(Strict):
    num_draft_tokens: int
    row: list[int]
    commit_limit: int | None = Field(None, description="tokens the step may commit (max_tokens or a stop string)")


class MetricsVector(Strict):
    """Steps observed in order: the generator adds the accepted drafts of each and the aggregate metrics."""

    name: str
    requirements: list[str]
    eos_token_ids: list[int]
    steps: list[MetricsStep]


class CountingMetricsFile(Strict):
    vectors: list[MetricsVector]
