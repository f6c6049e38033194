"""The harness's core types: statuses, per-requirement results, checks, and the engine interface.

Every other module of the harness imports these; this module imports none of them but the registry (``spec``,
which imports none), the statuses (``statuses``, which import none) and, for annotations, the profile (which imports
neither the core nor anything above it), so the layers of docs/architecture.md have no cycle. Scoring rules:
specs/INTERPRETING.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from specconform.specs.interface import BatchUpdate, RejectionCase

from . import spec

# the statuses sit below the core (the schemas validate records against them); the core exports them
from .statuses import (  # noqa: F401
    BAD,
    BLOCKED,
    ERROR,
    FAIL,
    NOT_APPLICABLE,
    NOT_CLAIMED,
    NOT_RUN,
    PASS,
    PRECONDITION_FAILED,
    SEVERITY,
    STATUSES,
    TIMEOUT,
    worst,
)

if TYPE_CHECKING:  # annotations only: profiles and cases import the core, not the other way round
    from .profiles import Profile


class UsageError(ValueError):
    """A user's mistake (an engine's name, an option, a file): reported as one line, never as a traceback."""


@dataclass
class RequirementResult:
    """One requirement's verdict within one check: PASS only when ``cases > 0`` and none violated it.

    ``fingerprint`` names the failure mode (``<requirement>/<mode>``) so that an expectation can pin
    one way of failing; ``evidence`` is the first violating case, for people; ``reproduction`` is that
    case minimised, as a standalone golden-vector document (the runner writes it into the run folder
    and keeps its path here)."""

    status: str
    cases: int = 0
    evidence: str = ""
    fingerprint: str = ""
    reproduction: dict | str | None = None
    # the defect its minimal case shows (specconform.harness.checks.attribution.finding_key); "" if not named
    finding: str = ""

    def to_json(self) -> dict:
        data = {"status": self.status, "cases": self.cases, "evidence": self.evidence, "fingerprint": self.fingerprint}
        if self.reproduction is not None:
            data["reproduction"] = self.reproduction
        if self.finding:
            data["finding"] = self.finding
        return data


@dataclass
class Outcome:
    """A check's result: its status, a summary line, and a result per requirement it covers."""

    status: str
    message: str = ""
    requirements: dict[str, RequirementResult] = field(default_factory=dict)
    statistic: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    trials: int | None = None
    plots: list[dict] = field(default_factory=list)

    @property
    def violated(self) -> tuple[str, ...]:
        return tuple(r for r, result in self.requirements.items() if result.status == FAIL)


def uniform_outcome(status: str, message: str, requirements: Sequence[str]) -> Outcome:
    """An outcome that says the same of every requirement: a check that could not judge any of them
    (NOT_CLAIMED, PRECONDITION_FAILED, ERROR, TIMEOUT) leaves each with that status and no cases."""
    first_line = message.splitlines()[0] if message else ""
    return Outcome(status, message, {r: RequirementResult(status, 0, first_line) for r in requirements})


class Tally:
    """Per-requirement accounting inside one run of a check.

    ``exercised(ids)`` counts a judged case for each id; ``violated(id, mode, evidence)`` records a
    failure (the first evidence and mode of each requirement are kept). ``outcome`` turns the counts
    into results: FAIL where violated, PASS where exercised and never violated, NOT_RUN elsewhere.

    The check's own status (specs/INTERPRETING.md, RUN-STATUS-3): FAIL if any requirement failed;
    PASS only if every requirement passed, except the ``conditional`` ones, which apply only when the
    engine shows what they judge (a usage field it may omit, a tie rule its profile waives) and may
    stay NOT_RUN; NOT_RUN otherwise, the summary naming the requirements no case reached.

    An id the registry does not hold is an ``spec.UnknownRequirement`` wherever it is given, so that a misspelt id
    errs the check instead of judging a requirement that does not exist.
    """

    def __init__(self, requirements: Sequence[str], conditional: Sequence[str] = ()):
        spec.require_registered(requirements, "Tally(requirements)")
        spec.require_registered(conditional, "Tally(conditional)")
        self.requirements = tuple(requirements)
        self.conditional = frozenset(conditional)
        if self.conditional - set(self.requirements):
            raise KeyError(f"conditional requirements {sorted(self.conditional)} are not all in {self.requirements}")
        self.cases = dict.fromkeys(self.requirements, 0)
        self.failures: dict[str, tuple[str, str, dict | None, str]] = {}
        self.outside: dict[str, str] = {}  # requirement -> why a case of it lay outside the engine's contract
        self.blocking: dict[str, tuple[str, str]] = {}  # requirement -> (the finding that blocked it, why)

    def exercised(self, *ids: str) -> None:
        for rid in ids:
            self._known(rid, "exercised")
            self.cases[rid] += 1

    def violated(self, rid: str, mode: str, evidence: str, reproduction: dict | None = None, finding: str = "") -> None:
        """``mode`` names the way of failing without case-specific values (it becomes the fingerprint);
        ``reproduction`` is the failing case minimised, as a golden-vector document (kept for the first), and
        ``finding`` the defect it shows.

        A check may find a requirement it does not cover broken (an id outside the vocabulary seen by a
        greedy check): that requirement joins the results, with this failure as its only case. An id the registry
        does not hold is an error of the check, not a FAIL of a requirement that does not exist."""
        if rid not in self.cases:
            spec.require_registered((rid,), "Tally.violated")
            self.requirements += (rid,)
            self.cases[rid] = 0
        self.exercised(rid)
        self.failures.setdefault(rid, (mode, evidence, reproduction, finding))

    def not_applicable(self, why: str, *ids: str) -> None:
        """A case of ``ids`` was not run: it lies outside the engine's contract (``why``, the first kept). A
        requirement that only such cases would have reached reads NOT_APPLICABLE."""
        for rid in ids:
            self._known(rid, "not_applicable")
            self.outside.setdefault(rid, why)

    def blocked(self, rid: str, finding: str, why: str) -> None:
        """A case of ``rid`` failed on a defect its minimal case shows without any of ``rid``'s features: the
        failure is ``finding`` (recorded under its own requirement with ``violated``; ``why`` says which), and
        ``rid`` reads BLOCKED unless a case violated ``rid`` itself."""
        self._known(rid, "blocked")
        self.blocking.setdefault(rid, (finding, why))

    def _known(self, rid: str, method: str) -> None:
        if rid not in self.cases:
            spec.require_registered((rid,), f"Tally.{method}")
            raise KeyError(f"requirement {rid} is not among the check's requirements {self.requirements}")

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def outcome(self, summary: str, **statistics: Any) -> Outcome:
        results = {}
        for rid in self.requirements:
            if rid in self.failures:
                mode, evidence, reproduction, finding = self.failures[rid]
                results[rid] = RequirementResult(
                    FAIL, self.cases[rid], evidence, f"{rid}/{mode}", reproduction, finding
                )
            elif rid in self.blocking:
                finding, why = self.blocking[rid]
                results[rid] = RequirementResult(
                    BLOCKED, self.cases[rid], f"blocked by {finding}: {why}", finding=finding
                )
            elif self.cases[rid]:
                results[rid] = RequirementResult(PASS, self.cases[rid])
            elif rid in self.outside:
                results[rid] = RequirementResult(
                    NOT_APPLICABLE, 0, f"outside the engine's contract: {self.outside[rid]}"
                )
            else:
                results[rid] = RequirementResult(NOT_RUN, 0, "no case of this check exercised it")
        return check_outcome(results, summary, self.conditional, **statistics)


def check_outcome(
    results: dict[str, RequirementResult], summary: str, conditional: frozenset[str] = frozenset(), **statistics: Any
) -> Outcome:
    """A check's status from its requirements' (RUN-STATUS-3): FAIL if one failed; BLOCKED if one is blocked by a
    finding of another requirement; PASS if every requirement passed, a ``conditional`` one or one outside the
    engine's contract (NOT_APPLICABLE) excepted; NOT_APPLICABLE if every requirement is; NOT_RUN otherwise, the
    summary naming the requirements no case reached."""
    statuses = [r.status for r in results.values()]
    not_run = [r for r, result in results.items() if result.status == NOT_RUN and r not in conditional]
    if FAIL in statuses:
        status = FAIL
        first = next(result for result in results.values() if result.status == FAIL)
        summary = f"{first.evidence} [{summary}]"
    elif BLOCKED in statuses:
        status = BLOCKED
        first = next(result for result in results.values() if result.status == BLOCKED)
        summary = f"{first.evidence} [{summary}]"
    elif PASS in statuses and not not_run:
        status = PASS
    elif statuses and all(s == NOT_APPLICABLE for s in statuses):
        status = NOT_APPLICABLE
        summary = f"{next(iter(results.values())).evidence} [{summary}]"
    else:
        status = NOT_RUN
        summary = f"not run: {', '.join(not_run or results)} [{summary}]"
    return Outcome(status, summary, results, **statistics)


DEFAULT_SEED = 20261121  # the seed of every generated case unless a run names another (RunConfig.seed)


@dataclass
class Context:
    """What a check runs with: the profile it judges against, the seed of every generated case, and for
    statistical checks the most trials one case may run, the family-wise α, and the declared power: the
    smallest total-variation ``deviation`` every counted test detects with probability ``power`` and
    certifies a conforming engine within (specs/statistics.md)."""

    profile: Profile
    seed: int = DEFAULT_SEED
    trials: int = 1_000_000  # stats.DEFAULT_MAX_TRIALS
    alpha: float = 1e-6
    deviation: float = 0.03  # stats.DEFAULT_POWER
    power: float = 0.9


@dataclass(frozen=True)
class Check:
    """A named check of one conformance class that judges ``requirements`` and needs ``needs``
    (profile capabilities); ``run(engine, ctx)`` returns an ``Outcome``.

    ``preconditions`` are what every case of the check needs of the engine's input domain
    (``specconform.harness.contract.PRECONDITIONS``): an engine whose contract excludes one is not run on it.
    ``observes`` names, per requirement, the observables it is judged on (``specconform.harness.contract.OBSERVABLES``;
    ``"*"`` for every requirement of the check): a requirement whose observables are all derived by the engine's adapter
    is NOT_APPLICABLE for it."""

    name: str
    cls: str
    requirements: tuple[str, ...]
    needs: tuple[str, ...]
    description: str
    run: Callable[[Any, Context], Outcome]
    preconditions: tuple[str, ...] = ()
    observes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def observables(self, rid: str) -> tuple[str, ...]:
        """The observables ``rid`` is judged on in this check (none declared: engine-produced values only)."""
        found = dict(self.observes)
        return found.get(rid, found.get("*", ()))

    def __post_init__(self) -> None:
        """An id the registry does not hold fails where the check is built, not as a result of a requirement that
        does not exist."""
        spec.require_registered(self.requirements, f"check {self.name}")
        spec.require_registered((rid for rid, _ in self.observes if rid != "*"), f"check {self.name}'s observes")


# ---------------------------------------------------------------------------------------------
# The engine interface: one protocol per capability a profile can promise (specconform.harness.profiles).


@runtime_checkable
class Engine(Protocol):
    name: str
    version: str
    device: str
    profile: Profile


@runtime_checkable
class BudgetHandle(Protocol):
    """A budget state over ``max_num_reqs`` slots (capability ``budget``). Invalid input raises ``ValueError``."""

    def sync_batch(self, update: BatchUpdate | None) -> None: ...

    def forced_tokens(
        self, num_draft_tokens: Sequence[int] | None, draft_token_ids: Sequence[int] | None
    ) -> Sequence[int]:
        """The forced token id per logits row (``-1``: free), ``[Σ (K_i + 1)]``; ``num_draft_tokens``
        ``None`` means one row per slot."""

    def update_state(self, rows: Sequence[Sequence[int]]) -> None:
        """Commit each slot's emitted tokens (``[batch_size, W]``, ``-1`` padded)."""


@runtime_checkable
class LogitsBudgetHandle(BudgetHandle, Protocol):
    """Capability ``budget-logits``: forced rows written into logits ``[R, V]`` float32."""

    def apply_to_logits(self, logits: Any, num_draft_tokens: Sequence[int] | None, draft_token_ids: Any) -> Any: ...


@runtime_checkable
class BudgetEngine(Protocol):
    def budget_state(
        self, start: Sequence[int], end: Sequence[int], max_num_reqs: int, scope: str, max_spec_len: int = 0
    ) -> BudgetHandle: ...


@runtime_checkable
class RejectionEngine(Protocol):
    def rejection_sample(self, case: RejectionCase) -> tuple[Any, Any]:
        """``(token_ids [B, W] int, num_emitted [B] int)`` for a canonical case (capability ``rejection``)."""


@runtime_checkable
class CountingEngine(Protocol):
    def count_emitted(self, token_ids: Any, vocab_size: int) -> tuple[Any, Any, Any]:
        """``(num_emitted, broken_prefix, out_of_vocab)``, each ``[B]``, for ``token_ids [B, W]``."""


@runtime_checkable
class MetricsEngine(Protocol):
    def acceptance_metrics(
        self, steps: Sequence[tuple[int, Sequence[int], int | None]], eos_token_ids: Sequence[int]
    ) -> dict:
        """``acceptance_rate``, ``mean_acceptance_length``, ``accepted_per_position`` and, where the engine reports
        them, ``per_position_rates`` (AC-METRIC-3: accepted over drafted per position, NaN where none) over
        ``(K, row, commit_limit)`` steps: ``commit_limit`` is how many of the row's tokens the request
        may still commit (``max_tokens`` left, or up to a completed stop string; None: no limit)."""


@runtime_checkable
class ServedEngine(Protocol):
    """An engine behind servers that can die mid-run (the HTTP adapter). The runner's engine process
    notes a server that stopped answering after a check, and revives it before the next one."""

    def dead_servers(self) -> dict[str, str]:
        """Each server that does not answer now, with why (the transport's error)."""

    def revive(self) -> list[str]:
        """Restart the servers that do not answer, or raise naming the one that cannot be; a line per
        restart made since the last call."""


@runtime_checkable
class TensorApiEngine(Protocol):
    """Capability ``tensor-api`` (thinking-budget.md section 10): ``tensor_api`` holds the engine's own tensor entry
    points, called with exactly the arguments a check gives: ``device`` (where its tensors live),
    ``budget_state(start_token_ids, end_token_ids, max_num_reqs, *, max_spec_len=0, scope="request")`` (the state
    with ``sync_batch``, ``update_state``, ``forced_tokens`` and ``apply_to_logits`` on tensors),
    ``rejection_sample(target_logits, draft_token_ids, num_draft_tokens, **options) -> (token_ids, num_emitted)``,
    ``count_emitted_validated(token_ids, vocab_size) -> (num_emitted, broken_prefix, out_of_vocab)`` and
    ``acceptance_stats(max_positions, eos_token_ids=())`` (``observe`` and the metrics of accepted-tokens.md
    section 4)."""

    tensor_api: Any


CAPABILITY_PROTOCOLS: dict[str, type] = {
    "budget": BudgetEngine,
    "rejection": RejectionEngine,
    "counting": CountingEngine,
    "metrics": MetricsEngine,
    "tensor-api": TensorApiEngine,
}


def missing_methods(engine: Any) -> list[str]:
    """The capabilities an engine's profile promises whose protocol the engine does not implement."""
    return [
        capability
        for capability, protocol in CAPABILITY_PROTOCOLS.items()
        if capability in engine.profile.capabilities and not isinstance(engine, protocol)
    ]


class UnparsableResponse(Exception):
    """The server answered, but the ``openai`` client could not read the answer: the server fails."""
