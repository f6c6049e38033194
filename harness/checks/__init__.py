"""The catalogue of checks, by area: every check names its conformance class, the requirements it
covers and the engine capabilities it needs. Importing the catalogue validates every declared
requirement id and class against ``specs/requirements.yaml``.

Kinds: golden-vector replay (``vectors``); differential against the oracle on generated cases and
invariants over whole generations (``budget``, ``rejection``, ``counting``); calibrated statistical
checks (``rejection``); API-level checks over HTTP (``api``).
"""

from __future__ import annotations

from dataclasses import replace

from .. import spec
from ..cases.budget import EXAMPLES
from ..cases.rejection import RejectionFamily
from ..core import Check
from . import api, budget, counting, rejection, tensor_api
from .budget import BudgetFamily
from .vectors import vector_checks

_REGISTRY = spec.load_registry()
_CLASSES = spec.classes()


def _check(name, cls, requirements, needs, description, run, observes: dict | None = None) -> Check:
    """A check of the catalogue; ``observes`` names, for this check only, what a requirement is judged on beyond
    the registry's ``observes`` (``rejection/counter-based-draws`` judges RS-RNG-1 on the draws' offsets)."""
    unknown = [r for r in requirements if r not in _REGISTRY]
    if unknown:
        raise ValueError(f"check {name} declares requirements missing from specs/requirements.yaml: {unknown}")
    if cls not in _CLASSES:
        raise ValueError(f"check {name} declares an unknown class {cls!r}")
    judged_on = dict(observes_of(requirements)) | (observes or {})
    return Check(name, cls, tuple(requirements), tuple(needs), description, run, observes=tuple(judged_on.items()))


def observes_of(requirements) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(requirement, observables)`` for each of ``requirements`` judged on named observables (the registry's
    ``observes``)."""
    return tuple((r, _REGISTRY[r].observes) for r in requirements if _REGISTRY[r].observes)


def _budget(name, cls, requirements, description, family, *, needs=("budget",), scope=None) -> Check:
    return _check(
        name, cls, requirements, needs, description, budget.scenario_check(family, tuple(requirements), scope)
    )


def _exact(name, cls, requirements, description, family: RejectionFamily, needs=("rejection",)) -> Check:
    return _check(name, cls, requirements, needs, description, rejection.exact_check(family, tuple(requirements)))


_STATISTICAL = (
    "RS-PROB-5",
    "RS-INPUT-1",
    "RS-PROB-6",
    "STAT-CASE-1",
    "STAT-CASE-2",
    "STAT-TEST-1",
    "STAT-TEST-2",
    "STAT-TEST-3",
    "STAT-TEST-4",
    "STAT-POWER-1",
    "STAT-CERT-1",
    "STAT-SEED-1",
)


def kernel_checks() -> list[Check]:
    """Every kernel-level check, in run order: vectors, budget, rejection, counting."""
    return vector_checks(_REGISTRY) + [
        _budget(
            "budget/sequential",
            "tb.core",
            ("TB-MARK-1", "TB-COUNT-1", "TB-FORCE-1", "TB-FORCE-4", "TB-NATURAL-1", "TB-UNTRACKED-1"),
            "one-token markers, no drafts, mixed budgets: forced rows equal the oracle's",
            BudgetFamily(examples=(EXAMPLES["stray-end-then-sections"],)),
        ),
        _check(
            "budget/whole-generations",
            "tb.core",
            ("TB-FORCE-1",),
            ("budget",),
            "generations hold exactly the budget and close with the whole E, judged by naive segmentation",
            budget.generation_invariants,
        ),
        _check(
            "budget/forced-logits",
            "tb.core",
            ("TB-FORCE-5", "TB-FORCE-6", "TB-UNTRACKED-1"),
            ("budget", "budget-logits"),
            "forced rows become one-hot (or hold the declared large constant), free rows stay untouched",
            budget.forced_logits_check,
        ),
        _budget(
            "budget/multitoken",
            "tb.multitoken",
            ("TB-MARK-2", "TB-MARK-3", "TB-FORCE-2"),
            "multi-token and self-overlapping markers from a 4-token alphabet",
            BudgetFamily(marker_lengths=(3, 3), alphabet=4),
        ),
        _budget(
            "budget/prompt-opened",
            "tb.prompt-opened",
            ("TB-PROMPT-1", "TB-PROMPT-2", "TB-PROMPT-3"),
            "prompts that open a section or end inside a marker",
            BudgetFamily(
                marker_lengths=(3, 3),
                alphabet=4,
                prompt="partial",
                examples=(EXAMPLES["start-inside-prompt-section"], EXAMPLES["partial-end-after-repeated-start"]),
            ),
        ),
        _budget(
            "budget/spec-decode",
            "tb.spec-decode",
            ("TB-SPEC-1", "TB-SPEC-2", "TB-SPEC-3", "TB-SPEC-4"),
            "drafts after the first sampled token (zero-draft rows and all-zero steps included): rows judged "
            "on their prefix",
            BudgetFamily(marker_lengths=(2, 3), alphabet=6, drafts=True, prompt="open"),
        ),
        _budget(
            "budget/batch",
            "tb.batch",
            ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5"),
            "removals, additions into holes and onto occupied slots, condensing moves, moves onto occupied "
            "slots, SWAPs; max_num_reqs 1 to 256",
            BudgetFamily(
                marker_lengths=(2, 2),
                alphabet=4,
                drafts=True,
                batch_ops=True,
                prompt="open",
                steps=60,
                max_num_reqs=(1, 256),
            ),
        ),
        _budget(
            "budget/scope-request",
            "tb.scope.request",
            ("TB-SCOPE-1",),
            "per-request scope: re-opened sections share what is left",
            BudgetFamily(alphabet=4, budgets=(0, 1, 2, 4)),
            scope="request",
        ),
        _budget(
            "budget/scope-section",
            "tb.scope.section",
            ("TB-SCOPE-2",),
            "per-section scope: every section gets the whole budget",
            BudgetFamily(alphabet=4, budgets=(0, 1, 2, 4)),
            scope="section",
        ),
        # Forced versus natural end (TB-END-*): engines declaring ``forced_end: phrase``
        _budget(
            "budget/forced-phrase",
            "tb.forced-phrase",
            ("TB-END-1", "TB-END-2"),
            "a transition phrase before E is forced; E alone, emitted or forced, closes the section",
            BudgetFamily(marker_lengths=(2, 2), alphabet=5, phrase=3, drafts=True, prompt="open"),
        ),
        _budget(
            "budget/other-end-markers",
            "tb.end-markers",
            ("TB-END-3",),
            "an end marker accepted beside E closes the section too; the budget still forces E",
            BudgetFamily(marker_lengths=(2, 2), alphabet=5, other_end=2, drafts=True, prompt="open"),
        ),
        _check(
            "budget/batch-errors",
            "tb.batch",
            ("TB-BATCH-4", "TB-BATCH-5"),
            ("budget",),
            "removing, moving from or swapping with a slot that a removal emptied is an error naming the slot; "
            "a step before the first update lays out no row",
            budget.batch_errors_check,
        ),
        _check(
            "budget/marker-borders",
            "tb.multitoken",
            ("TB-MARK-2", "TB-MARK-3"),
            ("budget",),
            "markers whose prefixes are also suffixes, met in streams that break off and resume partial matches, "
            "as E and as S, equal the oracle",
            budget.marker_borders_check,
        ),
        _check(
            "budget/api",
            "tb.api",
            ("TB-API-1", "TB-API-2", "TB-API-3"),
            ("budget",),
            "budget values and markers are validated",
            budget.api_check,
        ),
        _check(
            "budget/tensor-api",
            "tb.tensor-api",
            ("TB-TENSOR-1", "TB-TENSOR-2"),
            ("budget", "tensor-api"),
            "the budget state's own entry points reject each argument outside its legal values naming it, change "
            "nothing then, accept the legal edges, advance by committed tokens given to a step, and compare ids whole",
            tensor_api.budget_check,
        ),
        _exact(
            "rejection/greedy",
            "rs.greedy",
            ("RS-GREEDY-1", "RS-GREEDY-2", "RS-GREEDY-3"),
            "greedy cases with ties and masks equal the oracle",
            RejectionFamily(greedy="all", ties=True),
        ),
        _exact(
            "rejection/zero-draft",
            "rs.zero-draft",
            ("RS-ZERO-1",),
            "zero-draft requests emit exactly one token",
            RejectionFamily(greedy="all", zero_drafts="most"),
        ),
        _exact(
            "rejection/forced",
            "rs.forced",
            ("RS-FORCE-1",),
            "forced rows are one-hot before verification",
            RejectionFamily(greedy="all", forced=True),
        ),
        _check(
            "rejection/invalid-ids",
            "rs.input",
            ("RS-INPUT-5",),
            ("rejection", "input-validation"),
            "forced and draft ids just outside their allowed ranges are errors naming the field",
            rejection.invalid_ids_check,
        ),
        _check(
            "rejection/invalid-layout",
            "rs.input",
            ("RS-INPUT-3", "RS-INPUT-5"),
            ("rejection", "input-validation"),
            "a NaN in a free row beside a forced row, and tensors whose layout disagrees with num_draft_tokens "
            "(shapes, negative or mis-summed draft counts) or whose kind is wrong, are errors naming the field",
            rejection.invalid_layout_check,
        ),
        _check(
            "rejection/unvalidated-mode",
            "rs.input",
            ("RS-INPUT-7",),
            ("rejection",),
            "without input validation (an engine judged in that mode, or a mode beside validation), invalid ids emit "
            "ids in [0, V) only or an error; valid input is sampled as with validation",
            rejection.unvalidated_mode_check,
        ),
        _check(
            "rejection/fixed-width",
            "rs.layout",
            ("RS-LAYOUT-2", "RS-INPUT-5"),
            ("rejection",),
            "rows of a fixed-width output read through num_emitted equal the oracle's; a draft count above the "
            "width is an error naming it",
            rejection.fixed_width_check,
        ),
        _check(
            "rejection/tensor-api",
            "rs.tensor-api",
            ("RS-TENSOR-1",),
            ("rejection", "tensor-api"),
            "the sampler's own entry point rejects draft counts, max_spec_len and validate of the wrong kind naming "
            "them; omitted, temperature verifies greedily and validate validates",
            tensor_api.rejection_check,
        ),
        _check(
            "rejection/output-contract",
            "rs.input",
            ("RS-INPUT-1", "RS-INPUT-2", "RS-LAYOUT-2", "RS-PROB-3"),
            ("rejection",),
            "every output is a -1-padded prefix of in-range ids",
            rejection.output_contract,
        ),
        _exact(
            "rejection/reference-draws",
            "rs.seeded",
            (
                "RS-RNG-3",
                "RS-PROB-1",
                "RS-PROB-2",
                "RS-ONEHOT-1",
                "RS-MIXED-1",
                "RS-LAYOUT-1",
                "RS-RNG-2",
                "RS-ONEHOT-2",
            ),
            "mixed batches equal the oracle under the reference draws; a token sampled from the acceptance "
            "stream (RS-RNG-2) or from misaligned draft probabilities (RS-ONEHOT-2) is named",
            RejectionFamily(greedy="mixed", forced=True),
            needs=("rejection", "reference-draws"),
        ),
        _check(
            "rejection/seeded-independence",
            "rs.seeded",
            ("RS-RNG-1",),
            ("rejection", "seeded"),
            "a seeded request's tokens do not depend on its batch",
            rejection.seeded_independence,
        ),
        _check(
            "rejection/counter-based-draws",
            "rs.seeded",
            ("RS-RNG-1",),
            ("rejection", "seeded"),
            "a seeded step resumed at the next position replays the same tokens, whatever the call order",
            rejection.counter_based_draws,
            # where a seeded request's draws start is the caller's to say: an adapter that picks it is judged here
            observes={"RS-RNG-1": ("draw_offsets",)},
        ),
        _check(
            "rejection/acceptance-rule",
            "rs.probabilistic",
            ("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-PROB-4", "RS-ONEHOT-1", "RS-MIXED-1", "RS-LAYOUT-1"),
            ("rejection",),
            "fixed drafts under the engine's own draws: acceptance rate and rejection token G-tested, alone, "
            "in ragged and in mixed batches",
            rejection.acceptance_rule,
        ),
        _check(
            "rejection/distribution",
            "rs.probabilistic",
            _STATISTICAL,
            ("rejection",),
            "calibrated G-tests of every position and of the accepted length",
            rejection.distribution_check(_STATISTICAL, one_hot=False),
        ),
        _check(
            "rejection/distribution-one-hot",
            "rs.one-hot",
            ("RS-PROB-5", "RS-PROB-6"),
            ("rejection",),
            "drafts verified as one-hot keep the target distribution",
            rejection.distribution_check(("RS-PROB-5", "RS-PROB-6"), one_hot=True),
        ),
        _exact(
            "counting/sampler",
            "ac.count",
            ("AC-COUNT-1", "AC-COUNT-5"),
            "num_emitted equals the first placeholder of every row the sampler writes",
            RejectionFamily(greedy="all"),
        ),
        _check(
            "counting/validated",
            "ac.count",
            ("AC-COUNT-1", "AC-COUNT-2", "AC-COUNT-3", "AC-COUNT-4"),
            ("counting",),
            "a validating count flags broken prefixes and bad ids",
            counting.validated_count_check,
        ),
        _check(
            "counting/metrics",
            "ac.metrics",
            ("AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-STOP-1"),
            ("metrics",),
            "acceptance metrics equal their definitions, without EOS, with EOS, with max_tokens and stop-string limits",
            counting.metrics_check,
        ),
        _check(
            "counting/tensor-api",
            "ac.tensor-api",
            ("AC-TENSOR-1",),
            ("counting", "metrics", "tensor-api"),
            "the counting and metrics entry points reject arguments outside their legal values naming them, and a "
            "rejected step changes no metric; rows of width 0 and max_positions 0 are legal",
            tensor_api.counting_check,
        ),
    ]


def api_checks() -> list[Check]:
    """Every API-level check (``harness.checks.api``), in run order."""
    # what each check needs of the server, declared so that the runner and `specconform doctor` know it before
    # the check runs (each check's own precondition says the same when it is called directly)
    http = ("http",)
    ids = (*http, "token-ids", "marker-ids")  # token ids in responses, the markers' ids from /tokenize
    spec = (*ids, "spec-model")
    plain = (*http, "plain-model")
    checks = [
        _check(
            "api/budget-holds",
            "api.budget",
            ("API-BUDGET-1", "API-BUDGET-2", "API-REASON-1"),
            ids,
            "every position the budget forces carries the forced token (oracle replay over returned ids)",
            api.holds,
        ),
        _check("api/budget-binds", "api.budget", ("API-BUDGET-3",), ids, "a positive control thinks longer", api.binds),
        _check("api/budget-zero-and-one", "api.budget", ("API-BUDGET-4",), ids, "budgets 0 and 1", api.zero_and_one),
        _check(
            "api/concurrent-mixed-budgets",
            "api.budget",
            ("API-BUDGET-5",),
            ids,
            "16 concurrent requests, mixed budgets and seeds, each equal to its sequential run",
            api.concurrent_budgets,
        ),
        _check(
            "api/budget-with-speculation",
            "api.budget",
            ("API-BUDGET-6",),
            spec,
            "the budget holds with speculative decoding on",
            api.spec_budget,
        ),
        _check(
            "api/multi-token-end-marker",
            "api.budget",
            ("API-BUDGET-7",),
            ids,
            "a multi-token end marker arrives whole and contiguous",
            api.multitoken_end,
        ),
        # The budget meeting other request features (API-TRUNC-1, API-N-1, API-NOTHINK-1, API-LOGPROB-1)
        _check(
            "api/truncated-end-marker",
            "api.budget",
            ("API-TRUNC-1",),
            ids,
            "max_tokens right before and inside the forced end marker: length, forced prefix, no content",
            api.truncated_end,
        ),
        _check("api/n-choices", "api.budget", ("API-N-1",), ids, "n = 2 with a budget", api.n_choices),
        _check(
            "api/budget-without-thinking",
            "api.budget",
            ("API-NOTHINK-1",),
            ids,
            "a budget with enable_thinking false changes nothing the prompt closed",
            api.budget_without_thinking,
        ),
        _check(
            "api/forced-logprobs",
            "api.budget",
            ("API-LOGPROB-1",),
            ids,
            "logprobs of forced tokens as the profile declares",
            api.forced_logprobs,
        ),
        _check(
            "api/budget-with-structured-output",
            "api.budget",
            ("API-GRAMMAR-1",),
            ids,
            "a budget with response_format json_object: refused naming the field, or the forced positions hold",
            api.budget_with_structured_output,
        ),
        _check(
            "api/utf8-boundary",
            "api.budget",
            ("API-UTF-1",),
            ids,
            "a budget that runs out inside a UTF-8 character forces at once, or as late as the profile declares",
            api.utf8_boundary,
        ),
        _check(
            "api/usage",
            "api.usage",
            ("API-USAGE-1", "API-USAGE-2"),
            ids,
            "usage equals the returned ids; reasoning_tokens equals the reasoning tokens",
            api.usage,
        ),
        _check(
            "api/streaming-parity",
            "api.streaming",
            ("API-STREAM-1",),
            http,
            "streaming and non-streaming agree",
            api.streaming,
        ),
        _check(
            "api/invalid-budget", "api.errors", ("API-ERROR-1",), http, "invalid budgets get 400", api.invalid_budget
        ),
        _check(
            "api/budget-without-markers",
            "api.errors",
            ("API-ERROR-2",),
            plain,
            "a budget on a model without markers gets 400",
            api.budget_without_markers,
        ),
        _check(
            "api/greedy-spec-identity",
            "api.spec-decode",
            ("API-SPEC-1",),
            spec,
            "greedy output identical with speculation on and off",
            api.greedy_spec_identity,
        ),
        _check(
            "api/sampled-spec-equivalence",
            "api.spec-decode",
            ("API-SPEC-2",),
            spec,
            "sampled first tokens equivalent with speculation on and off (TV upper bound)",
            api.sampled_spec_equivalence,
        ),
        _check(
            "api/sampling-params-with-speculation",
            "api.spec-decode",
            ("API-SPEC-4",),
            spec,
            "top_k 1, min_p 1 and a +100 logit bias leave one token with speculation on, as without",
            api.sampling_params_with_speculation,
        ),
        _check(
            "api/spec-counters-agree",
            "api.spec-decode",
            ("API-SPEC-3",),
            spec,
            "the engine's speculative-decoding counters agree with the tokens the client received",
            api.spec_counters_agree,
        ),
    ]
    # a response the openai client cannot parse is a failure of the server, not an error of the check
    # a failed requirement leaves the requests the check sent as a reproduction
    return [
        replace(check, run=api.leaves_reproductions(check.name, api.client_parses(check.run, check.requirements)))
        for check in checks
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
    return sorted(r for r in set(_REGISTRY) - covered if not r.startswith("RUN-"))
