"""Conformance checks keyed by requirement id.

Every check names its conformance class, the requirements it covers, the engine capabilities it
needs, and runs against a kernel-level engine (``harness.engines``) with a ``Context`` (seed,
trials, α, profile). It returns an ``Outcome``: PASS, or FAIL with the requirement ids the
evidence shows broken, plus any statistic, p-value and plot data.

Kinds: golden-vector replay; differential against the oracle on generated cases; invariants over
whole generations; statistical distribution checks (specs/statistics.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import replay, spec, stats
from .oracle import budget as tb
from .oracle import counting as ac
from .oracle import rejection as rs
from .oracle.naive import thinking_tokens
from .profiles import Profile

PASS, FAIL, PRECONDITION_FAILED = "PASS", "FAIL", "PRECONDITION_FAILED"


@dataclass
class Context:
    profile: Profile
    seed: int = 20261121
    trials: int = 20_000  # per case, statistical checks
    alpha: float = 1e-6  # family-wise, per statistical check


@dataclass
class Outcome:
    status: str
    message: str = ""
    violated: tuple[str, ...] = ()
    statistic: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    trials: int | None = None
    plots: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Check:
    name: str
    cls: str
    requirements: tuple[str, ...]
    needs: tuple[str, ...]
    description: str
    run: Callable[[object, Context], Outcome]


def _fail(requirement: str, message: str, **kwargs) -> Outcome:
    return Outcome(FAIL, message, (requirement,), **kwargs)


# ---------------------------------------------------------------------------------------------
# Thinking budget: generated persistent-batch scenarios, compared with the oracle step by step.


@dataclass
class _Added:
    index: int
    budget: object
    prompt_token_ids: list


@dataclass
class _Update:
    batch_size: int
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)
    moved: list = field(default_factory=list)


@dataclass
class BudgetFamily:
    """How a family of scenarios is drawn."""

    marker_lengths: tuple[int, int] = (1, 1)  # max lengths of S and E
    alphabet: int = 6  # token ids 0..alphabet-1 (markers are drawn from them)
    drafts: bool = False
    batch_ops: bool = False
    prompt: str = "plain"  # plain | open | partial
    budgets: tuple = (None, -1, 0, 1, 2, 3, 8)
    steps: int = 40
    scenarios: int = 30
    max_reqs: int = 4
    max_spec: int = 3


@dataclass
class BudgetMismatch:
    step: int
    slot: int
    row: int
    num_drafts: int
    expected: list[int]
    got: list[int]
    first: int  # index of the first differing row
    slot_state: tb.RequestBudget | None
    end: tuple[int, ...]
    start: tuple[int, ...]
    no_draft_step: bool
    swapped_untracked: bool


def _draw_markers(rng, family: BudgetFamily):
    start = list(rng.integers(0, family.alphabet, rng.integers(1, family.marker_lengths[0] + 1)))
    end = list(rng.integers(0, family.alphabet, rng.integers(1, family.marker_lengths[1] + 1)))
    return [int(t) for t in start], [int(t) for t in end]


def _draw_prompt(rng, family: BudgetFamily, start, end):
    body = [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, 6))]
    if family.prompt == "open":
        return body + start + [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, 5))]
    if family.prompt == "partial":
        choice = rng.integers(0, 3)
        if choice == 0:
            return body + start[: max(len(start) - 1, 0)]
        if choice == 1:
            return (
                body
                + start
                + [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, 4))]
                + end[: max(len(end) - 1, 0)]
            )
        return body + start + [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, 4))]
    return body


def _budget_scenario(engine, rng, family: BudgetFamily, scope: str):
    """Drive one scenario; return ``None`` or the first ``BudgetMismatch``."""
    start, end = _draw_markers(rng, family)
    model = tb.BudgetBatch(start, end, family.max_reqs, scope)
    state = engine.budget_state(start, end, family.max_reqs, scope, max_spec_len=family.max_spec)
    size = 0
    swapped_untracked: set[int] = set()
    for step in range(family.steps):
        if step == 0 or (family.batch_ops and rng.random() < 0.3):
            removed = [int(s) for s in range(size) if rng.random() < 0.25] if family.batch_ops else []
            live = [s for s in range(size) if s not in removed]
            holes = sorted(removed)
            added = []
            while len(live) + len(added) < family.max_reqs and (step == 0 or rng.random() < 0.5):
                slot = holes.pop(0) if holes else size + sum(a.index >= size for a in added)
                budget = family.budgets[rng.integers(0, len(family.budgets))]
                added.append(_Added(slot, budget, _draw_prompt(rng, family, start, end)))
                if not family.batch_ops and len(added) >= family.max_reqs:
                    break
            live = sorted(live + [a.index for a in added])
            moved = []
            while live and live[-1] >= len(live):
                hole = min(set(range(len(live))) - set(live))
                moved.append((live[-1], hole, "UNIDIRECTIONAL"))
                live = sorted(live[:-1] + [hole])
            if family.batch_ops and len(live) >= 2 and rng.random() < 0.6:
                a, b = (int(x) for x in rng.choice(live, 2, replace=False))
                moved.append((a, b, "SWAP"))
            update = _Update(len(live), removed, added, moved)
            model_before = [model.state(s) if model.occupied(s) else "empty" for s in range(family.max_reqs)]
            model.apply(update)
            state.sync_batch(update)
            size = len(live)
            for a, b, kind in moved:
                if kind == "SWAP":
                    for x, y in ((a, b), (b, a)):
                        if model_before[x] is None and model_before[y] not in (None, "empty"):
                            swapped_untracked.add(y)  # y now holds the untracked request
        drafts = [
            [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, family.max_spec + 1))]
            if family.drafts and rng.random() < 0.8
            else []
            for _ in range(size)
        ]
        num = [len(d) for d in drafts]
        flat = [t for d in drafts for t in d]
        expected = model.forced_rows(num, flat)
        got = [int(x) for x in state.forced_tokens(num, flat)]
        if got != expected:
            first = next(i for i, (e, g) in enumerate(zip(expected, got + [None] * len(expected))) if e != g)
            offsets = np.concatenate([[0], np.cumsum(np.array(num) + 1)])
            slot = int(np.searchsorted(offsets, first, side="right") - 1)
            return BudgetMismatch(
                step,
                slot,
                first - int(offsets[slot]),
                num[slot],
                expected,
                got,
                first,
                model.state(slot).clone() if model.state(slot) else None,
                tuple(end),
                tuple(start),
                sum(num) == 0,
                slot in swapped_untracked,
            )
        committed = []
        offset = 0
        for d in drafts:
            rows = expected[offset : offset + len(d) + 1]
            offset += len(d) + 1
            accept = int(rng.integers(0, len(d) + 1))
            tokens = []
            for j in range(len(d) + 1):
                if j < accept and rows[j] in (-1, d[j]):
                    tokens.append(d[j])
                    continue
                tokens.append(rows[j] if rows[j] != -1 else int(rng.integers(0, family.alphabet)))
                break
            committed.append(tokens + [-1] * (family.max_spec + 1 - len(tokens)))
        model.commit(committed)
        state.update_state(committed)
    return None


def _classify_budget(m: BudgetMismatch) -> str:
    """The requirement a forced-row mismatch shows broken."""
    expected = m.expected[m.first]
    got = m.got[m.first] if m.first < len(m.got) else None
    if m.no_draft_step and any(e != -1 for e in m.expected[1:]) and all(g == -1 for g in m.got[1:]):
        return "TB-SPEC-4"  # every forced row collapsed onto row 0
    if expected == -1:
        if m.swapped_untracked:
            return "TB-BATCH-3"  # the vacated side of a SWAP kept a budget
        return "TB-UNTRACKED-1" if m.slot_state is None else "TB-FORCE-1"
    if got == -1 and m.row < m.num_drafts:
        return "TB-SPEC-1"  # a draft row left free
    if got == -1 and m.slot_state is not None and m.slot_state.opened_in_prompt and len(m.start) > 1:
        return "TB-PROMPT-3"  # a multi-token S in the prompt counted short
    if got == m.end[0] and expected != m.end[0]:
        return "TB-FORCE-2"  # the end marker restarted instead of continued
    return "TB-FORCE-1"


def _budget_check(
    family: BudgetFamily, classify: Callable[[BudgetMismatch], str] = _classify_budget, scope: str | None = None
):
    def run(engine, ctx: Context) -> Outcome:
        rng = np.random.default_rng(ctx.seed)
        for n in range(family.scenarios):
            mismatch = _budget_scenario(engine, rng, family, scope or ctx.profile.scope)
            if mismatch is not None:
                return _fail(
                    classify(mismatch),
                    f"scenario {n} step {mismatch.step}: slot {mismatch.slot} row {mismatch.row} forced "
                    f"{mismatch.got[mismatch.first] if mismatch.first < len(mismatch.got) else 'nothing'}, "
                    f"expected {mismatch.expected[mismatch.first]} (S={list(mismatch.start)}, E={list(mismatch.end)})",
                )
        return Outcome(PASS, f"{family.scenarios} scenarios × {family.steps} steps agree with the oracle")

    return run


def _generation_invariants(engine, ctx: Context) -> Outcome:
    """Whole generations (no drafts): no section exceeds its budget; exactly the budget when the model
    never starts E; E arrives whole (TB-FORCE-3), judged by naive segmentation, not by the oracle."""
    rng = np.random.default_rng(ctx.seed)
    plots = []
    for n in range(40):
        start, end = [100 + int(rng.integers(0, 2))], [110, 111][: int(rng.integers(1, 3))]
        budget = int(rng.integers(0, 12))
        state = engine.budget_state(start, end, 1, ctx.profile.scope, max_spec_len=0)
        state.sync_batch(_Update(1, added=[_Added(0, budget, [1, 2])]))
        stream, forced_at = [], []
        proposals = start + [int(t) for t in rng.integers(0, 50, 60)]  # never starts E on its own
        for position, proposal in enumerate(proposals):
            forced = int(state.forced_tokens(None, None)[0])
            token = proposal if forced == -1 else forced
            if forced != -1:
                forced_at.append(position)
            stream.append(token)
            state.update_state([[token]])
        if n < 3:  # budget traces for the report: thinking tokens generated so far, per position
            trace = [
                sum(t for t, _, _ in thinking_tokens([1, 2] + stream[: i + 1], start, end, 2))
                for i in range(len(stream))
            ]
            plots.append(
                {
                    "kind": "budget-trace",
                    "title": f"generation {n}: budget {budget}, S={start}, E={end}",
                    "thinking": trace,
                    "budget": budget,
                    "forced": forced_at,
                }
            )
        sections = thinking_tokens([1, 2] + stream, start, end, 2)
        if not sections or not sections[0][2]:
            return _fail("TB-FORCE-3", f"generation {n}: budget {budget} never closed the section: {stream[:30]}")
        if sections[0][0] != budget:
            return _fail("TB-FORCE-3", f"generation {n}: {sections[0][0]} thinking tokens under budget {budget}")
    return Outcome(PASS, "40 generations hold exactly their budget and close with the whole end marker", plots=plots)


def _api_check(engine, ctx: Context) -> Outcome:
    for value in (-2, True, 1.5, "1"):
        try:
            state = engine.budget_state([1], [2], 2, ctx.profile.scope)
            state.sync_batch(_Update(1, added=[_Added(0, value, [1])]))
        except ValueError as exc:
            if "budget" not in str(exc):
                return _fail("TB-API-2", f"budget {value!r} rejected without naming the field: {exc}")
            continue
        return _fail("TB-API-2", f"budget {value!r} was accepted")
    state = engine.budget_state([1], [2], 2, ctx.profile.scope)
    state.sync_batch(_Update(2, added=[_Added(0, -1, [1]), _Added(1, None, [1])]))
    if any(int(x) != -1 for x in state.forced_tokens(None, None)):
        return _fail("TB-API-1", "a request with budget -1 or None was forced")
    for start, end in (([], [2]), ([1], [])):
        try:
            engine.budget_state(start, end, 2, ctx.profile.scope)
        except ValueError:
            continue
        return _fail("TB-API-3", f"empty marker accepted: S={start} E={end}")
    return Outcome(PASS, "invalid budgets and markers are rejected naming the field; -1 and None are untracked")


LARGE_FORCED_LOGIT = 1e8  # the least a large-constant forced cell may hold (vLLM writes 1e9)


def _forced_logits_check(engine, ctx: Context) -> Outcome:
    state = engine.budget_state([1], [7, 8], 2, ctx.profile.scope, max_spec_len=2)
    state.sync_batch(_Update(2, added=[_Added(0, 1, [1]), _Added(1, None, [1])]))
    rng = np.random.default_rng(ctx.seed)
    logits = rng.normal(size=(5, 12)).astype(np.float32)
    logits[1, 7] = -np.inf  # the forced token was masked before
    out = np.asarray(state.apply_to_logits(logits.copy(), [2, 1], [3, 7, 5]))
    expected = [-1, 7, 8, -1, -1]
    for row, token in enumerate(expected):
        if token == -1:
            if not np.array_equal(out[row], logits[row]):
                return _fail("TB-UNTRACKED-1", f"free row {row} was changed")
        elif ctx.profile.forced_logit == "large-constant":  # the declared variant (TB-FORCE-6)
            if not (np.isfinite(out[row, token]) and out[row, token] >= LARGE_FORCED_LOGIT):
                return _fail("TB-FORCE-6", f"forced row {row}: logit {out[row, token]} at {token} is not large")
            if not np.array_equal(np.delete(out[row], token), np.delete(logits[row], token)):
                return _fail("TB-FORCE-6", f"forced row {row}: cells other than {token} were changed")
        elif not (out[row, token] == 0 and np.isneginf(np.delete(out[row], token)).all()):
            return _fail("TB-FORCE-5", f"forced row {row} is not one-hot at {token}: {out[row].tolist()}")
    if ctx.profile.forced_logit == "large-constant":
        return Outcome(
            PASS, f"forced cells hold at least {LARGE_FORCED_LOGIT:g} (declared variant), the rest untouched"
        )
    return Outcome(PASS, "forced rows are one-hot (0 / -inf), free rows untouched")


# ---------------------------------------------------------------------------------------------
# Rejection sampling


def _random_case(
    rng,
    *,
    greedy: float,
    forced: float = 0.0,
    with_q: bool | None = None,
    zero_draft=0.2,
    vocab=None,
    ties=False,
    masks=True,
):
    V = int(vocab or rng.choice([1, 2, 5, 37, 64, 100, 257]))
    B = int(rng.integers(1, 5))
    K = [0 if rng.random() < zero_draft else int(rng.integers(1, 4)) for _ in range(B)]
    rows = sum(K) + B
    logits = rng.normal(scale=2.0, size=(rows, V))
    if ties:
        logits = np.round(logits)
    if masks:
        mask = rng.random((rows, V)) < 0.3
        mask[np.arange(rows), rng.integers(0, V, rows)] = False
        logits[mask] = -np.inf
    temperature = [0.0 if rng.random() < greedy else float(rng.choice([0.5, 1.0, 1.5])) for _ in range(B)]
    use_q = bool(rng.random() < 0.5) if with_q is None else with_q
    q = None
    if use_q and sum(K):
        q = rng.dirichlet(np.ones(V), size=sum(K)).astype(np.float32).astype(np.float64)
        q = q / q.sum(axis=1, keepdims=True)
        drafts = [int(rng.choice(V, p=row / row.sum())) for row in q]
    else:
        drafts = [int(t) for t in rng.integers(0, V, sum(K))]
    forced_ids = np.where(rng.random(rows) < forced, rng.integers(0, V, rows), -1) if forced else None
    return rs.RejectionCase(
        logits.astype(np.float32).astype(np.float64),
        drafts,
        K,
        temperature,
        q,
        forced_ids,
        seeds=rng.integers(0, 2**62, B),
        positions=rng.integers(0, 2**40, B),
    )


def _output_problem(case: rs.RejectionCase, tokens, num) -> tuple[str, str] | None:
    """Structural violations of one output (RS-LAYOUT-2, RS-INPUT-1, RS-PROB-3, AC-COUNT-5)."""
    V = case.vocab_size
    tokens = np.asarray(tokens)
    num = np.asarray(num)
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    if tokens.shape[0] != case.batch_size or tokens.shape[1] < width:
        return "RS-LAYOUT-2", f"token_ids has shape {tokens.shape}; expected ({case.batch_size}, >= {width})"
    offsets = case.row_offsets()
    for i in range(case.batch_size):
        row = tokens[i].tolist()
        n = ac.num_emitted(row)
        if any(t != -1 for t in row[n:]):
            return "RS-LAYOUT-2", f"request {i}: real tokens after a placeholder: {row}"
        if not 1 <= n <= case.num_draft_tokens[i] + 1:
            return "RS-LAYOUT-2", f"request {i} emitted {n} tokens with K = {case.num_draft_tokens[i]}"
        if any(not 0 <= t < V for t in row[:n]):
            return "RS-INPUT-1", f"request {i}: ids outside [0, {V}): {row}"
        if int(num[i]) != n:
            return "AC-COUNT-5", f"request {i}: num_emitted {int(num[i])} but the row holds {n} tokens"
        for j, t in enumerate(row[:n]):
            r = offsets[i] + j
            forced = -1 if case.forced_token_ids is None else int(case.forced_token_ids[r])
            if forced == -1 and np.isneginf(case.target_logits[r, t]):
                return "RS-PROB-3", f"request {i} position {j}: emitted token {t} has p = 0"
            if forced != -1 and j == n - 1 and t != forced:
                return "RS-FORCE-1", f"request {i} position {j}: forced {forced}, emitted {t}"
    return None


def _exact_rejection_check(make_case, classify_mismatch: str, cases: int = 150, skip_ties=False):
    def run(engine, ctx: Context) -> Outcome:
        rng = np.random.default_rng(ctx.seed)
        compared = 0
        for n in range(cases):
            case = make_case(rng)
            expected, num, traces = rs.sample_case(case)
            if any(min(t.accept_margins, default=np.inf) < 1e-5 or t.sample_margin < 1e-5 for t in traces):
                continue  # within 1e-5 of a floating-point decision (RS-RNG-3)
            if skip_ties and ctx.profile.tie_break == "any" and _has_tie(case):
                continue
            tokens, got_num = engine.rejection_sample(case)
            problem = _output_problem(case, tokens, got_num)
            if problem:
                return _fail(problem[0], f"case {n}: {problem[1]}")
            width = expected.shape[1]
            if np.asarray(tokens)[:, :width].tolist() != expected.tolist():
                requirement = "RS-GREEDY-3" if skip_ties and _has_tie(case) else classify_mismatch
                return _fail(
                    requirement,
                    f"case {n}: emitted {np.asarray(tokens).tolist()}, expected "
                    f"{expected.tolist()} (K={case.num_draft_tokens.tolist()}, V={case.vocab_size})",
                )
            compared += 1
        return Outcome(PASS, f"{compared} cases equal the oracle token for token")

    return run


def _has_tie(case: rs.RejectionCase) -> bool:
    finite = np.where(np.isneginf(case.target_logits), -np.inf, case.target_logits)
    return bool(((finite == finite.max(axis=1, keepdims=True)).sum(axis=1) > 1).any())


def _output_contract(engine, ctx: Context) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    for n in range(120):
        V = int(rng.choice([1, 3, 37, 1000, 4097, 8193]))
        case = _random_case(rng, greedy=0.3, forced=0.1, vocab=V)
        if rng.random() < 0.5:  # a zero-probability tail, the shape that once returned id V
            case.target_logits[:, V // 2 + 1 :] = -np.inf
            empty = ~np.isfinite(case.target_logits).any(axis=1)
            case.target_logits[empty, 0] = 0.0
        tokens, num = engine.rejection_sample(case)
        problem = _output_problem(case, tokens, num)
        if problem:
            return _fail(problem[0], f"case {n}: {problem[1]}")
    return Outcome(PASS, "120 cases: -1-padded prefixes of 1..K+1 ids in [0, V), no p = 0 token, counts agree")


def _seeded_independence(engine, ctx: Context) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    for n in range(20):
        V = int(rng.choice([7, 100, 1000]))
        K = int(rng.integers(1, 4))
        logits = rng.normal(size=(K + 1, V))
        q = rng.dirichlet(np.ones(V), size=K)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        alone, _ = engine.rejection_sample(
            rs.RejectionCase(logits, drafts, [K], [1.0], q, seeds=[seed], positions=[position])
        )
        others = int(rng.integers(1, 4))
        other_logits = rng.normal(size=(2 * others, V))
        other_q = rng.dirichlet(np.ones(V), size=others)
        batch = rs.RejectionCase(
            np.concatenate([other_logits, logits]),
            [int(rng.integers(0, V)) for _ in range(others)] + drafts,
            [1] * others + [K],
            [0.7] * others + [1.0],
            np.concatenate([other_q, q]),
            seeds=list(rng.integers(0, 2**62, others)) + [seed],
            positions=[0] * others + [position],
        )
        together, _ = engine.rejection_sample(batch)
        if np.asarray(together)[-1, : K + 1].tolist() != np.asarray(alone)[0, : K + 1].tolist():
            return _fail(
                "RS-RNG-1",
                f"case {n}: seeded request emitted {np.asarray(alone)[0].tolist()} alone and "
                f"{np.asarray(together)[-1].tolist()} in a batch of {others + 1}",
            )
    return Outcome(PASS, "20 seeded requests emit the same tokens alone and in a batch")


def _engine_sampler(engine):
    def sample(logits, drafts, num, q, temperature, seeds, positions):
        case = rs.RejectionCase(logits, drafts, num, temperature, q, seeds=seeds, positions=positions)
        return engine.rejection_sample(case)[0]

    return sample


def _distribution_check(one_hot: bool):
    def run(engine, ctx: Context) -> Outcome:
        cases = [c for c in stats.standard_cases(large_vocab=1000) if c.pass_q]
        if one_hot:  # the same targets, drafts drawn from q but verified as one-hot
            cases = [
                stats.DistributionCase(c.name + "-one-hot", c.target_logits, c.q, c.temperature, pass_q=False)
                for c in cases
            ]
        alpha_test = stats.family_alpha_test(ctx.alpha, cases)
        sampler = _engine_sampler(engine)
        reports = [
            stats.distribution_check(sampler, c, ctx.trials, alpha_test, ctx.seed + i) for i, c in enumerate(cases)
        ]
        plots = []
        for case, report in zip(cases, reports):
            plots.append(
                {
                    "kind": "distribution",
                    "case": case.name,
                    "target": case.p.tolist(),
                    "positions": [
                        {"p_value": r.p_value, "tv_upper": r.tv_upper, "trials": r.trials} for r in report.positions
                    ],
                    "accepted_length": {
                        "p_value": report.accepted_length.p_value,
                        "trials": report.accepted_length.trials,
                    },
                    "empirical": report.empirical,
                    "lengths": report.lengths,
                    "expected_lengths": report.expected_lengths,
                }
            )
        worst = min(
            (r.p_value for rep in reports for r in rep.positions + [rep.accepted_length] if r.trials), default=1.0
        )
        failed = [(rep.case, sorted(rep.violations())) for rep in reports if not rep.passed]
        detect = reports[0].detectable_tv
        common = dict(p_value=worst, alpha=alpha_test, trials=ctx.trials, plots=plots)
        if failed:
            violated = tuple(sorted({v for _, vs in failed for v in vs}))
            return Outcome(FAIL, f"{failed}; smallest p {worst:.3g} at α_test {alpha_test:.2g}", violated, **common)
        return Outcome(
            PASS,
            f"{len(cases)} cases × {ctx.trials} trials; smallest p {worst:.3g} at α_test "
            f"{alpha_test:.2g}; detects TV ≥ {detect:.3f} with power 0.99",
            **common,
        )

    return run


# ---------------------------------------------------------------------------------------------
# Counting


def _validated_count_check(engine, ctx: Context) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    rows = [[5, 6, 9, -1], [-1, -1, -1, -1], [5, -1, 7, -1], [5, 11, -1, -1], [1, 2, 3, 4]]
    for _ in range(200):
        row = [int(t) for t in rng.integers(-1, 12, 4)]
        rows.append(row)
    tokens = np.array(rows)
    num, broken, oov = (np.asarray(x) for x in engine.count_emitted(tokens, 10))
    problems = ac.validate_rows(rows, 10)
    for i, row in enumerate(rows):
        if int(num[i]) != ac.num_emitted(row):
            requirement = "AC-COUNT-2" if any(p.row == i and p.kind == "hole" for p in problems) else "AC-COUNT-1"
            if row[0] == -1:
                requirement = "AC-COUNT-4"
            return _fail(requirement, f"row {row}: counted {int(num[i])}, first placeholder at {ac.num_emitted(row)}")
        if bool(broken[i]) != any(p.row == i and p.kind == "hole" for p in problems):
            return _fail("AC-COUNT-2", f"row {row}: broken prefix reported {bool(broken[i])}")
        if bool(oov[i]) != any(p.row == i and p.kind == "out_of_vocab" for p in problems):
            return _fail("AC-COUNT-3", f"row {row}: out-of-vocabulary reported {bool(oov[i])}")
    return Outcome(PASS, f"{len(rows)} rows counted by definition; every broken prefix and bad id flagged")


def _metrics_check(engine, ctx: Context) -> Outcome:
    rng = np.random.default_rng(ctx.seed)
    eos = [3]
    steps = []
    for _ in range(300):
        k = int(rng.integers(0, 5))
        n = int(rng.integers(0, k + 2))
        row = [int(t) for t in rng.integers(0, 8, n)] + [-1] * (k + 1 - n)
        steps.append((k, row))
    oracle = ac.AcceptanceMetrics(max_positions=4)
    committed = 0
    for k, row in steps:
        oracle.observe(k, row, eos)
        if k:
            committed += ac.committed_after_eos(row, eos)
    got = engine.acceptance_metrics(steps, eos)
    if not np.isclose(got["mean_acceptance_length"], oracle.mean_acceptance_length):
        return _fail(
            "AC-METRIC-4" if committed else "AC-METRIC-2",
            f"mean acceptance length {got['mean_acceptance_length']}, expected {oracle.mean_acceptance_length}",
        )
    if not np.isclose(got["acceptance_rate"], oracle.acceptance_rate):
        return _fail("AC-METRIC-1", f"acceptance rate {got['acceptance_rate']}, expected {oracle.acceptance_rate}")
    if list(got["accepted_per_position"]) != oracle.accepted_per_position:
        return _fail(
            "AC-METRIC-3", f"per position {got['accepted_per_position']}, expected {oracle.accepted_per_position}"
        )
    if not np.isclose(oracle.num_drafts * got["mean_acceptance_length"], committed):
        return _fail("AC-METRIC-5", "drafts × mean length differs from the committed tokens")
    return Outcome(PASS, "300 steps: rate, mean length, per-position counts equal the definitions")


# ---------------------------------------------------------------------------------------------
# Golden vectors


def _vector_checks() -> list[Check]:
    registry = spec.load_registry()
    out = []
    for name, requirements, runner in replay.replay_checks():
        entry = _vector_entry(name)
        needs = ("budget",) if name.startswith("vectors/thinking-budget/") else ("rejection",)
        if needs == ("rejection",) and "expected_error_field" in entry:
            needs += ("input-validation",)
        if "RS-RNG-3" in requirements:
            needs += ("reference-draws",)

        def run(engine, ctx, runner=runner, requirements=requirements):
            message = runner(engine)
            return Outcome(FAIL, message, (requirements[0],)) if message else Outcome(PASS, "replayed exactly")

        out.append(
            Check(
                name,
                registry[requirements[0]].cls,
                tuple(requirements),
                needs,
                entry.get("description") or "golden vector replay",
                run,
            )
        )
    return out


def _vector_entry(name: str) -> dict:
    _, kind, entry = name.split("/")
    data = spec.load_vectors(kind)
    for group in data.values():
        if isinstance(group, list):
            for item in group:
                if item["name"] == entry:
                    return item
    raise KeyError(name)


def all_checks() -> list[Check]:
    """Every check, in run order."""
    checks = _vector_checks()
    checks += [
        Check(
            "budget/sequential",
            "tb.core",
            ("TB-MARK-1", "TB-COUNT-1", "TB-FORCE-1", "TB-FORCE-4", "TB-NATURAL-1", "TB-UNTRACKED-1"),
            ("budget",),
            "one-token markers, no drafts, mixed budgets: forced rows equal the oracle's",
            _budget_check(BudgetFamily()),
        ),
        Check(
            "budget/whole-generations",
            "tb.core",
            ("TB-FORCE-3",),
            ("budget",),
            "generations hold exactly the budget, judged by naive segmentation",
            _generation_invariants,
        ),
        Check(
            "budget/forced-logits",
            "tb.core",
            ("TB-FORCE-5", "TB-FORCE-6", "TB-UNTRACKED-1"),
            ("budget", "budget-logits"),
            "forced rows become one-hot (or hold the declared large constant), free rows stay untouched",
            _forced_logits_check,
        ),
        Check(
            "budget/multitoken",
            "tb.multitoken",
            ("TB-MARK-2", "TB-MARK-3", "TB-FORCE-2"),
            ("budget",),
            "multi-token and self-overlapping markers from a 3-token alphabet",
            _budget_check(BudgetFamily(marker_lengths=(3, 3), alphabet=3)),
        ),
        Check(
            "budget/prompt-opened",
            "tb.prompt-opened",
            ("TB-PROMPT-1", "TB-PROMPT-2", "TB-PROMPT-3"),
            ("budget",),
            "prompts that open a section or end inside a marker",
            _budget_check(
                BudgetFamily(marker_lengths=(3, 3), alphabet=4, prompt="partial"),
                classify=lambda m: "TB-PROMPT-3" if len(m.start) > 1 else "TB-PROMPT-1",
            ),
        ),
        Check(
            "budget/spec-decode",
            "tb.spec-decode",
            ("TB-SPEC-1", "TB-SPEC-2", "TB-SPEC-3", "TB-SPEC-4"),
            ("budget",),
            "drafts (zero-draft rows and all-zero steps included): rows judged on their prefix",
            _budget_check(BudgetFamily(marker_lengths=(2, 3), alphabet=4, drafts=True, prompt="open")),
        ),
        Check(
            "budget/batch",
            "tb.batch",
            ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5"),
            ("budget",),
            "removals, additions into holes, condensing moves and SWAPs, tracked and untracked",
            _budget_check(
                BudgetFamily(marker_lengths=(2, 2), alphabet=4, drafts=True, batch_ops=True, prompt="open", steps=60)
            ),
        ),
        Check(
            "budget/scope-request",
            "tb.scope.request",
            ("TB-SCOPE-1",),
            ("budget",),
            "per-request scope: re-opened sections share what is left",
            _budget_check(
                BudgetFamily(alphabet=3, budgets=(0, 1, 2, 4)), classify=lambda m: "TB-SCOPE-1", scope="request"
            ),
        ),
        Check(
            "budget/scope-section",
            "tb.scope.section",
            ("TB-SCOPE-2",),
            ("budget",),
            "per-section scope: every section gets the whole budget",
            _budget_check(
                BudgetFamily(alphabet=3, budgets=(0, 1, 2, 4)), classify=lambda m: "TB-SCOPE-2", scope="section"
            ),
        ),
        Check(
            "budget/api",
            "tb.api",
            ("TB-API-1", "TB-API-2", "TB-API-3"),
            ("budget",),
            "budget values and markers are validated",
            _api_check,
        ),
        Check(
            "rejection/greedy",
            "rs.greedy",
            ("RS-GREEDY-1", "RS-GREEDY-2", "RS-GREEDY-3"),
            ("rejection",),
            "greedy cases with ties and masks equal the oracle",
            _exact_rejection_check(lambda rng: _random_case(rng, greedy=1.0, ties=True), "RS-GREEDY-1", skip_ties=True),
        ),
        Check(
            "rejection/zero-draft",
            "rs.zero-draft",
            ("RS-ZERO-1",),
            ("rejection",),
            "zero-draft requests emit exactly one token",
            _exact_rejection_check(lambda rng: _random_case(rng, greedy=1.0, zero_draft=0.7), "RS-ZERO-1"),
        ),
        Check(
            "rejection/forced",
            "rs.forced",
            ("RS-FORCE-1",),
            ("rejection",),
            "forced rows are one-hot before verification",
            _exact_rejection_check(lambda rng: _random_case(rng, greedy=1.0, forced=0.4), "RS-FORCE-1"),
        ),
        Check(
            "rejection/output-contract",
            "rs.input",
            ("RS-INPUT-1", "RS-INPUT-2", "RS-LAYOUT-2", "RS-PROB-3"),
            ("rejection",),
            "every output is a -1-padded prefix of in-range ids",
            _output_contract,
        ),
        Check(
            "rejection/reference-draws",
            "rs.seeded",
            ("RS-RNG-3", "RS-PROB-1", "RS-PROB-2", "RS-PROB-4", "RS-ONEHOT-1", "RS-MIXED-1", "RS-LAYOUT-1"),
            ("rejection", "reference-draws"),
            "mixed batches equal the oracle under the reference draws",
            _exact_rejection_check(lambda rng: _random_case(rng, greedy=0.3, forced=0.1), "RS-PROB-1"),
        ),
        Check(
            "rejection/seeded-independence",
            "rs.seeded",
            ("RS-RNG-1",),
            ("rejection", "seeded"),
            "a seeded request's tokens do not depend on its batch",
            _seeded_independence,
        ),
        Check(
            "rejection/distribution",
            "rs.probabilistic",
            (
                "RS-PROB-5",
                "RS-PROB-6",
                "RS-ONEHOT-2",
                "RS-RNG-2",
                "STAT-CASE-1",
                "STAT-CASE-2",
                "STAT-TEST-1",
                "STAT-TEST-2",
                "STAT-TEST-3",
                "STAT-TEST-4",
                "STAT-POWER-1",
                "STAT-CERT-1",
                "STAT-SEED-1",
            ),
            ("rejection",),
            "calibrated G-tests of every position and of the accepted length",
            _distribution_check(one_hot=False),
        ),
        Check(
            "rejection/distribution-one-hot",
            "rs.one-hot",
            ("RS-ONEHOT-1", "RS-PROB-5", "RS-PROB-6"),
            ("rejection",),
            "drafts verified as one-hot keep the target distribution",
            _distribution_check(one_hot=True),
        ),
        Check(
            "counting/sampler",
            "ac.count",
            ("AC-COUNT-1", "AC-COUNT-5"),
            ("rejection",),
            "num_emitted equals the first placeholder of every row the sampler writes",
            _exact_rejection_check(lambda rng: _random_case(rng, greedy=1.0, zero_draft=0.3), "AC-COUNT-1"),
        ),
        Check(
            "counting/validated",
            "ac.count",
            ("AC-COUNT-2", "AC-COUNT-3", "AC-COUNT-4"),
            ("counting",),
            "a validating count flags broken prefixes and bad ids",
            _validated_count_check,
        ),
        Check(
            "counting/metrics",
            "ac.metrics",
            ("AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-METRIC-5"),
            ("metrics",),
            "acceptance metrics equal their definitions, EOS truncation included",
            _metrics_check,
        ),
    ]
    return checks


def all_checks_with_api() -> list[Check]:
    """Kernel-level checks, then the API-level checks (``harness.api``)."""
    from .api import api_checks

    return all_checks() + api_checks()


def uncovered_requirements(checks: list[Check] | None = None) -> list[str]:
    """Registered requirements no check covers (listed in every report).

    ``RUN-*`` requirements bind the runner, not an engine: the runner's own tests exercise them."""
    covered = {r for c in (checks or all_checks_with_api()) for r in c.requirements}
    return sorted(r for r in set(spec.load_registry()) - covered if not r.startswith("RUN-"))
