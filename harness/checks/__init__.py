"""The catalogue of checks, by area: every check declares its conformance class, the requirements it covers and
the engine capabilities it needs where it is written (``specconform.harness.checks.catalogue``), and importing the
catalogue validates every declared requirement id and class against ``specs/requirements.yaml``. This module gathers
them in run order.

Kinds: golden-vector replay (``vectors``); differential against the oracle on generated cases and
invariants over whole generations (``budget``, ``rejection``, ``counting``); calibrated statistical
checks (``rejection``); API-level checks over HTTP (``api``).
"""

from __future__ import annotations

from dataclasses import replace

from ..core import Check
from . import api, budget, counting, rejection, tensor_api  # noqa: F401  importing an area declares its checks
from .catalogue import REGISTRY, declared, verify_order
from .vectors import vector_checks

# The run order, by name, in which reports and tests list the checks (the tensor-level entry points beside their
# area's other checks). A declared check missing here, or a name here that no check declares, is an error at import.
KERNEL_ORDER = (
    "budget/sequential",
    "budget/whole-generations",
    "budget/forced-logits",
    "budget/multitoken",
    "budget/prompt-opened",
    "budget/spec-decode",
    "budget/batch",
    "budget/scope-request",
    "budget/scope-section",
    "budget/forced-phrase",
    "budget/other-end-markers",
    "budget/batch-errors",
    "budget/marker-borders",
    "budget/api",
    "budget/tensor-api",
    "rejection/greedy",
    "rejection/zero-draft",
    "rejection/forced",
    "rejection/invalid-ids",
    "rejection/invalid-layout",
    "rejection/unvalidated-mode",
    "rejection/fixed-width",
    "rejection/tensor-api",
    "rejection/output-contract",
    "rejection/reference-draws",
    "rejection/own-draws",
    "rejection/own-draws-one-hot",
    "rejection/seeded-independence",
    "rejection/counter-based-draws",
    "rejection/mixed-seeding",
    "rejection/acceptance-rule",
    "rejection/distribution",
    "rejection/distribution-one-hot",
    "counting/sampler",
    "counting/validated",
    "counting/metrics",
    "counting/tensor-api",
)
API_ORDER = (
    # first: the others compare responses to one seeded request, and a defect that breaks seeds is named by it
    "api/seeded-reproducible",
    "api/budget-holds",
    "api/budget-binds",
    "api/budget-zero-and-one",
    "api/concurrent-mixed-budgets",
    "api/budget-with-speculation",
    "api/multi-token-end-marker",
    "api/truncated-end-marker",
    "api/n-choices",
    "api/budget-without-thinking",
    "api/forced-logprobs",
    "api/budget-with-structured-output",
    "api/utf8-boundary",
    "api/usage",
    "api/streaming-parity",
    "api/invalid-budget",
    "api/budget-without-markers",
    "api/greedy-spec-identity",
    "api/sampled-spec-equivalence",
    "api/sampling-params-with-speculation",
    "api/spec-counters-agree",
)
verify_order(KERNEL_ORDER + API_ORDER)


def kernel_checks() -> list[Check]:
    """Every kernel-level check, in run order: vectors, budget, rejection, counting."""
    return vector_checks(REGISTRY) + declared(KERNEL_ORDER)


def api_checks() -> list[Check]:
    """Every API-level check (``specconform.harness.checks.api``), in run order."""
    # a response the openai client cannot parse is a failure of the server, not an error of the check
    # a failed requirement leaves the requests the check sent as a reproduction
    return [
        replace(check, run=api.leaves_reproductions(check.name, api.client_parses(check.run, check.requirements)))
        for check in declared(API_ORDER)
    ]


def all_checks() -> list[Check]:
    """Kernel-level checks, then API-level checks."""
    return kernel_checks() + api_checks()


def by_name() -> dict[str, Check]:
    return {check.name: check for check in all_checks()}


def uncovered_requirements(checks: list[Check] | None = None) -> list[str]:
    """Registered requirements no check covers (listed in every report).

    ``RUN-*`` requirements bind the runner, not an engine: the runner's own tests exercise them."""
    covered = {r for c in (checks or all_checks()) for r in c.requirements}
    return sorted(r for r in set(REGISTRY) - covered if not r.startswith("RUN-"))
