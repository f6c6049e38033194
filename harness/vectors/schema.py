"""The golden vectors' source files: what ``harness/vectors/golden/<kind>/<group>.yaml`` may hold, as pydantic models.

Each file holds the inputs of one group of a published vector file (``specs/vectors/<kind>.json``); the generator
(``rejection``) reads it and adds what the oracle computes. A key that no model names is an error that names the key
and the file (``harness.schemas.parse``).

To add a golden vector: add an entry to the group's file, run ``specconform vectors --write`` and review the diff of
``specs/vectors/``; ``specconform vectors`` (and the test suite) checks the published files are current.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import Field

from ..oracle import rejection as rs
from ..schemas import Strict, parse

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


def read(kind: str, group: str, model: type[Strict], directory: Path | None = None):
    """``<directory>/<kind>/<group>.yaml`` (default: the package's ``golden/``) read as ``model``; a ``ValueError``
    names the file and each key that is unknown, missing or of the wrong value."""
    path = (directory or GOLDEN_DIR) / kind / f"{group}.yaml"
    return parse(model, yaml.safe_load(path.read_text()), f"golden vector file {str(path)!r}")


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


class Case(CaseFields):
    """A whole ``RejectionCase``."""

    target_logits: list[list[float]]
    draft_token_ids: list[int]
    num_draft_tokens: list[int]
    temperature: list[float]

    def rejection_case(self, **replace) -> rs.RejectionCase:
        return rs.RejectionCase(**{**self.model_dump(), **replace})


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
