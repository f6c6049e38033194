"""The schemas of the project's data files, as pydantic models: profile files (``specconform.harness.profiles``),
expectation files (``specconform.harness.expectations``), run records (``results.jsonl``, docs/records.md) and product
records (``specconform.harness.products``). A key that no model field names is an error that names it;
``specconform schema`` writes each model's JSON Schema to ``specs/schemas/`` for editors.

The models say what a file may hold; what its values mean stays with the code that reads them (a profile's
variants and classes are checked by ``specconform.harness.profiles.Profile``, a proof's paths by
``specconform.harness.proofs``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .statuses import STATUSES

# a release range's draws where no scheme of specconform.harness.oracle.draws is what those releases draw
UNMODELLED_DRAWS = "unmodelled"

Status = Literal[STATUSES]  # type: ignore[valid-type]


class Strict(BaseModel):
    """A mapping whose every key is a field: an unknown key is an error that names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def parse(model: type[BaseModel], data: Any, where: str, at: Callable[[str], str] | None = None):
    """``data`` read as ``model``; a ``ValueError`` says ``where`` and names each key that is unknown, missing or of
    the wrong value. ``at`` (``yaml_files.YamlFile.at``) gives where a top-level key stands in its file
    (``FILE:LINE``), which then leads the message."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        if at is not None and errors and errors[0]["loc"]:
            where = f"{at(str(errors[0]['loc'][0]))}: {where}"
        raise ValueError(f"{where}: " + "; ".join(_problem(model, error) for error in errors)) from None


def _problem(model: type[BaseModel], error: Mapping[str, Any]) -> str:
    location = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        holder = _model_at(model, error["loc"][:-1])
        known = sorted(field.alias or name for name, field in holder.model_fields.items()) if holder else []
        return f"unknown key {location!r}" + (f"; known keys: {known}" if known else "")
    if error["type"] == "missing":
        return f"lacks {location!r}"
    return f"{location or 'the file'}: {error['msg']}; got {error['input']!r}"


def _model_at(model: type[BaseModel], location: tuple) -> type[BaseModel] | None:
    """The model that holds the key at ``location`` within ``model`` (through lists, mappings and optional
    values); None where no model does."""
    current: Any = model
    for part in location:
        while get_origin(current) in (list, dict, Union, UnionType):
            arguments = [a for a in get_args(current) if a is not type(None)]
            if get_origin(current) in (list, dict):  # ``part`` is an index or a key: step into the values
                current = arguments[-1]
                break
            current = arguments[0]
        else:
            if not (isinstance(current, type) and issubclass(current, BaseModel)):
                return None
            field = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
            if field is None:
                return None
            current = field.annotation
    while get_origin(current) in (Union, UnionType):
        current = next(a for a in get_args(current) if a is not type(None))
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


# ---------------------------------------------------------------------------------------------
# Profile files (specconform.harness.profiles.load_profile)


class ProfileFile(Strict):
    """An engine profile in YAML: a built-in profile (``base``) and what this engine declares otherwise."""

    name: str | None = Field(None, description="the profile's name (default: the file's stem)")
    base: str = Field("canonical", description="the built-in profile this one starts from")
    classes: list[str] | None = Field(None, description="the claimed classes (default: the base's)")
    drop_classes: list[str] = Field([], description="classes of the base the engine does not claim")
    scope: str | None = Field(None, description="variant: request (canonical) or section")
    tie_break: str | None = Field(None, description="lowest (canonical) or any")
    forced_logit: str | None = Field(None, description="variant (TB-FORCE-6): one-hot (canonical) or large-constant")
    layout: str | None = Field(None, description="variant (RS-LAYOUT-3): ragged (canonical) or padded")
    verification: str | None = Field(None, description="RUN-PROFILE-3: exact (canonical) or a non-exact mode's name")
    draws: str | None = Field(
        None,
        description="the draw scheme of its seeded requests, versioned with the engine "
        "(specconform.harness.oracle.draws: reference, vllm-mrv2, sglang-seeded, flashinfer-philox)",
    )
    forced_end: str | None = Field(None, description="variant (TB-END-1): marker (canonical) or phrase")
    end_markers: str | None = Field(None, description="variant (TB-END-3): one (canonical) or several")
    capabilities: list[str] | None = Field(
        None, description="what the adapter offers (specconform.harness.profiles.CAPABILITIES)"
    )
    contract: list[str] | None = Field(None, description="inputs the engine's own callers never produce")
    derived: list[str] | None = Field(None, description="observables the adapter computes instead of reading them")
    field_names: dict[str, list[str]] | None = Field(
        None, description="the engine's own names of the spec's fields, which its errors may name (TB-API-3)"
    )


# ---------------------------------------------------------------------------------------------
# Expectation files (specconform.harness.expectations.load_expectations)


class Conditions(Strict):
    """Globs on a record's fields: the expectation applies where each matches."""

    engine: str | None = None
    engine_version: str | None = None
    device: str | None = None


class ExpectationEntry(Strict):
    """A known result (RUN-EXPECT-1): a check's status, or one requirement's with ``requirement``."""

    model_config = ConfigDict(populate_by_name=True)

    check: str = Field(description="a check's name or a glob")
    status: Status
    reason: str
    link: str = ""
    requirement: str = Field("", description="narrows the entry to this requirement's result")
    fingerprint: list[str] = Field(
        [], description="'<requirement>/<mode>': the ways of failing it pins (one or a list)"
    )
    conditions: Conditions = Field(Conditions(), alias="if")
    proof: dict[str, str | list[str]] | None = Field(
        None,
        description="{patch, reproduction, server?, defects?}: paths relative to the project root; defects: the "
        "single-defect patches a combined patch joins (its failures count under each of those defects)",
    )

    @field_validator("fingerprint", mode="before")
    @classmethod
    def _one_or_a_list(cls, value):
        return [value] if isinstance(value, str) else (value or [])

    @model_validator(mode="after")
    def _fingerprints_of_the_requirement(self):
        for fingerprint in self.fingerprint:
            if not fingerprint.startswith(self.requirement + "/"):
                raise ValueError(
                    f"fingerprint {fingerprint!r} is not '<requirement>/<mode>'"
                    + (f" of {self.requirement}" if self.requirement else " (a fingerprint needs a requirement)")
                )
        return self


class ExpectationsFile(Strict):
    """An engine's expectation file."""

    engine: str = Field("", description="the engine the file is for (documentation)")
    expectations: list[ExpectationEntry] = []


# ---------------------------------------------------------------------------------------------
# Run records (results.jsonl; docs/records.md)


class RequirementRecord(Strict):
    """One requirement's result within a record."""

    status: Status
    cases: int = Field(description="cases that exercised the requirement")
    evidence: str
    fingerprint: str = Field(description="'<requirement>/<mode>' of a failure; empty otherwise")
    reproduction: str | None = Field(None, description="the minimal reproduction, relative to the run folder")
    finding: str | None = Field(None, description="the defect its minimal case shows")
    expected_status: str | None = None
    expectation_reason: str | None = None
    expectation_link: str | None = None
    expectation_proof: str | None = None
    expectation_defects: list[str] | None = Field(None, description="the defects a combined proof patch joins")


class RunRecord(Strict):
    """One check's result on one engine: one line of ``results.jsonl``."""

    check: str
    cls: str
    requirements: list[str]
    status: Status
    message: str
    results: dict[str, RequirementRecord]
    engine: str
    engine_spec: str = Field(description="the engine as the command line named it")
    engine_version: str
    device: str
    profile: str
    claimed_classes: list[str] | None = Field(
        None, description="every class the profile claims, judged in this run or not (none: a record written before)"
    )
    seed: int
    duration_s: float
    reproduce: str = Field(description="the command that runs this check again")
    statistic: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    trials: int | None = None
    expected_status: str | None = None
    expectation_reason: str = ""
    expectation_link: str = ""
    unexpected: list[str] = Field([], description="what no expectation covers: requirement ids or 'check'")
    plots: list[dict] = []
    reproduction: str = Field("", description="the first failing requirement's reproduction, relative to the run")
    violated: list[str] = Field([], description="the requirements whose status is FAIL (default: read off results)")

    @model_validator(mode="before")
    @classmethod
    def _violated_of_results(cls, data: Any) -> Any:
        """A record made without ``violated`` (as the runner makes each) names the requirements its results FAIL."""
        if isinstance(data, dict) and "violated" not in data and isinstance(data.get("results"), dict):
            failed = [rid for rid, result in data["results"].items() if _status_of(result) == "FAIL"]
            data = {**data, "violated": failed}
        return data

    @property
    def regression(self) -> bool:
        """A bad result that no expectation covers (RUN-EXPECT-2): what fails a run."""
        return bool(self.unexpected)

    @property
    def unexpected_pass(self) -> bool:
        return self.status == "PASS" and self.expected_status not in (None, "PASS")

    def to_json(self) -> dict[str, Any]:
        """The record as one line of ``results.jsonl`` holds it: the keys it was given or made with (a record read
        from a file is written back with the same keys), in the model's order."""
        return self.model_dump(mode="json", exclude_unset=True)


def _status_of(result: Any) -> Any:
    return result.get("status") if isinstance(result, dict) else getattr(result, "status", None)


# ---------------------------------------------------------------------------------------------
# Product records (harness/products/<name>/product.yaml; specconform.harness.products)


class ProductInstall(Strict):
    """How a product's engine is installed."""

    tox_env: str | None = Field(None, description="the tox environment that installs the engine and judges it")
    packages: list[str] = Field([], description="the engine's own packages, pinned as that environment pins them")
    constraints: str | None = Field(None, description="a pip constraints file beside the record, for what it pulls")


class ProductFile(Strict):
    """Everything the project knows about one engine it judges and publishes: its adapter, profile, expectations,
    install and judge command, and its published report folders. File names are relative to the record's folder."""

    name: str = Field(description="the product's name: its folder's name")
    description: str = Field(description="what is judged, in one line")
    engines: list[str] = Field(description="the --engine forms it is judged as (an adapter's module:factory)")
    imports: str | None = Field(
        None, description="the engine's package its adapter imports in process (a usage error names it when absent)"
    )
    api_profile: str | None = Field(
        None, description="--api-profile: the name of its server's API profile, whose fields are in api-profile.yaml"
    )
    profile: str | None = Field(
        None, description="its profile file (specconform.harness.profiles); none: the adapter's built-in"
    )
    expectations: str | None = Field(
        None, description="its expectation file (specconform.harness.expectations.load_expectations)"
    )
    install: ProductInstall = ProductInstall()
    judge: list[str] = Field(description="the commands that judge it into its published report folders")
    reports: list[str] = Field([], description="its published report folders under reports/engines/")
    releases: str | None = Field(
        None,
        description="its releases file (ReleasesFile): what differs between the engine's releases its adapter serves; "
        "none: the adapter serves one release",
    )


# ---------------------------------------------------------------------------------------------
# Release files (harness/products/<name>/releases.yaml; specconform.harness.products.releases)


class ReleaseRange(Strict):
    """Releases of an engine that one adapter drives the same way: what they share and differ in from the others."""

    versions: list[str] = Field(min_length=1, description="the releases taught, each exactly as the engine reports it")
    names: dict[str, str] = Field(
        min_length=1,
        description="adapter factory -> the name it is judged as on these releases, '{series}' standing for the "
        "release's major.minor and '{version}' for the release; a factory not named is refused (what the releases "
        "lack)",
    )
    expectations: str | None = Field(None, description="its expectation file, beside the record")
    profile: str | None = Field(None, description="its profile file, beside the record (default: the product's)")
    draws: str | None = Field(
        None,
        description="the draw scheme of these releases' seeded requests, which every factory's profile takes over its "
        f"own: a scheme of specconform.harness.oracle.draws, or '{UNMODELLED_DRAWS}' where none of them is what these "
        "releases draw (default: as each profile says)",
    )
    imports: dict[str, str] = Field(
        {}, description="role -> 'module:attribute' where these releases keep it, over the file's imports"
    )
    signatures: dict[str, list[str]] = Field(
        {},
        description="role -> the parameters the adapter passes it by name on these releases (checked against the "
        "engine's own signature), over the file's signatures",
    )


class ReleasesFile(Strict):
    """The releases an adapter serves, by range; ``imports`` and ``signatures`` hold what the ranges share."""

    engine: str = Field(description="the engine's package, whose version picks the range")
    imports: dict[str, str] = Field({}, description="role -> 'module:attribute', in every range unless it overrides")
    signatures: dict[str, list[str]] = Field({}, description="role -> parameters, in every range unless it overrides")
    ranges: list[ReleaseRange] = Field(min_length=1)

    @model_validator(mode="after")
    def _each_release_once(self):
        seen = [version for r in self.ranges for version in r.versions]
        twice = sorted({version for version in seen if seen.count(version) > 1})
        if twice:
            raise ValueError(f"releases in more than one range: {', '.join(twice)}")
        return self


SCHEMAS: dict[str, type[BaseModel]] = {
    "profile": ProfileFile,
    "expectations": ExpectationsFile,
    "record": RunRecord,
    "product": ProductFile,
    "releases": ReleasesFile,
}


def write_schemas(folder: Path) -> list[Path]:
    """Each model's JSON Schema as ``folder/<name>.schema.json``; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMAS.items():
        path = folder / f"{name}.schema.json"
        path.write_text(json.dumps(model.model_json_schema(by_alias=True), indent=2) + "\n")
        written.append(path)
    return written
