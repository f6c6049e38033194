"""The kernel API under hostile input (issue 16): every legal value accepted, every bad one rejected with an
error naming the argument and the value, no half-applied update, no id outside [0, V) even unvalidated."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specconform import impl
from specconform.harness.oracle import budget as tb
from specconform.harness.oracle import rejection as rs

START, END = [1], [2, 3]


@pytest.mark.req("TB-API-1")
@pytest.mark.parametrize("budget", [0, 3, 2**31 - 1, 2**31, 2**63, 10**30])
def test_every_budget_is_accepted_and_forces_as_the_oracle(target, budget):
    device, backend = target
    state = impl.ThinkingBudgetState(START, END, 2, device=device, backend=backend)
    state.sync_batch(impl.BatchUpdate(1, added=(impl.AddedRequest(0, budget, [5, 1]),)))
    model = tb.BudgetBatch(START, END, 2)
    model.apply(impl.BatchUpdate(1, added=(impl.AddedRequest(0, budget, [5, 1]),)))
    for _ in range(6):  # thinking tokens, unless the budget forces the end marker
        forced = state.forced_tokens().cpu().tolist()
        assert forced == model.forced_rows()
        token = forced[0] if forced[0] >= 0 else 7
        state.update_state(torch.tensor([[token]], device=device))
        model.commit([[token]])


@pytest.mark.req("TB-API-3")
def test_marker_ids_beyond_the_int32_state_are_rejected_naming_them():
    with pytest.raises(
        ValueError, match=r"end_token_ids must hold integer token ids in \[0, 2147483647\].*1099511627776"
    ):
        impl.ThinkingBudgetState([1], [2**40], 4)


def _two_requests(device="cpu", backend="torch"):
    state = impl.ThinkingBudgetState(START, END, 4, max_spec_len=2, device=device, backend=backend)
    state.sync_batch(impl.BatchUpdate(2, added=(impl.AddedRequest(0, 0, [1]), impl.AddedRequest(1, None, [1]))))
    return state


@pytest.mark.req("TB-BATCH-4")
@pytest.mark.parametrize(
    "update,message",
    [
        (
            impl.BatchUpdate(2, added=(impl.AddedRequest(2, 1, "ab"),), moved=((0, 1, impl.Move.SWAP),)),
            "prompt_token_ids",
        ),
        (
            impl.BatchUpdate(2, added=(impl.AddedRequest(2, 1, [1.5]),), moved=((0, 1, impl.Move.SWAP),)),
            "prompt_token_ids",
        ),
        (impl.BatchUpdate(2, moved=((0, 1, impl.Move.SWAP), (1, 0))), "moved entries"),
        (impl.BatchUpdate(2, moved=((0, 1, impl.Move.SWAP), "01")), "moved entries"),
        (impl.BatchUpdate(2, added=((2, 1, [1]),), moved=((0, 1, impl.Move.SWAP),)), "added entries"),
        (impl.BatchUpdate(2.0), "batch_size"),
        (impl.BatchUpdate(2, removed=5), "removed must be a list or tuple"),
        ("swap", "update must be a BatchUpdate"),
    ],
)
def test_a_bad_update_changes_nothing_even_after_a_good_swap(target, update, message):
    device, backend = target
    state = _two_requests(device, backend)
    before = state.state.clone()
    with pytest.raises(ValueError, match=message):
        state.sync_batch(update)
    assert torch.equal(state.state, before) and state.batch_size == 2
    assert state.forced_tokens().cpu().tolist() == [2, -1]  # the SWAP did not land on either side
    state.sync_batch(impl.BatchUpdate(2, moved=((0, 1, impl.Move.SWAP),)))  # the bookkeeping agrees
    assert state.forced_tokens().cpu().tolist() == [-1, 2]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda s: s.forced_tokens([1, 0], torch.tensor([4])), "num_draft_tokens must be a torch.Tensor.*list"),
        (lambda s: s.forced_tokens(torch.tensor([1, 0]), torch.tensor([4.0])), "draft_token_ids.*float32"),
        (lambda s: s.forced_tokens(torch.tensor([True, False]), torch.tensor([4])), "num_draft_tokens.*bool"),
        (lambda s: s.forced_tokens(np.array([1, 0]), torch.tensor([4])), "num_draft_tokens.*ndarray"),
        (lambda s: s.apply_to_logits(torch.zeros(2, 8, dtype=torch.int64)), "logits.*floating.*int64"),
        (lambda s: s.apply_to_logits(torch.zeros(2, 3)), r"end_token_ids \[2, 3\] must lie in \[0, V\).*V = 3"),
        (lambda s: s.apply_to_logits(torch.zeros(3, 8)), r"logits must have shape \(2, V\); got \(3, 8\)"),
        (lambda s: s.apply_to_logits(torch.zeros(2, 8, 1)), r"logits must have shape \(2, V\); got \(2, 8, 1\)"),
        (lambda s: s.update_state(torch.tensor([[4.0], [4.0]])), "sampled_token_ids.*float32"),
    ],
)
def test_budget_calls_with_wrong_types_name_the_argument_and_value(call, message):
    with pytest.raises(ValueError, match=message):
        call(_two_requests())


def _case(gen, V=12, B=4, K=3, probs=False):
    k = gen.integers(0, K + 1, B)
    rows = int(k.sum()) + B
    logits = gen.normal(size=(rows, V)).astype(np.float32).astype(np.float64)
    logits[:, V - 1] = -np.inf  # the stand-in for an out-of-vocabulary draft: a token the target cannot emit
    q = None
    if probs:
        q = gen.dirichlet(np.ones(V), size=int(k.sum())).astype(np.float32).astype(np.float64)
        q = q / q.sum(axis=1, keepdims=True)
    forced = np.where(gen.random(rows) < 0.3, gen.integers(0, V - 1, rows), -1)
    return rs.RejectionCase(
        logits,
        gen.integers(0, V - 1, int(k.sum())),
        k,
        np.where(gen.random(B) < 0.5, 0.0, 1.0),
        q,
        forced,
        seeds=gen.integers(0, 2**62, B),
        positions=gen.integers(0, 2**40, B),
    )


@pytest.mark.req("RS-INPUT-7")
@pytest.mark.parametrize("probs", [False, True], ids=["one-hot", "draft-probs"])
@pytest.mark.parametrize("seed", range(4))
def test_unvalidated_out_of_vocabulary_ids_are_never_emitted(target, probs, seed):
    """Defined behaviour with validate=False: an out-of-vocabulary draft is never accepted (as a draft the
    target gives probability 0, here token V - 1 with logit -inf in the oracle's case); an out-of-vocabulary
    forced id forces nothing."""
    device, backend = target
    gen = np.random.default_rng(seed)
    case = _case(gen, probs=probs)
    V = case.vocab_size
    hostile_drafts = case.draft_token_ids.copy()
    oov = gen.random(hostile_drafts.shape[0]) < 0.5
    hostile_drafts[oov] = gen.choice([V, V + 3, V + 100, -5, -(2**40)], int(oov.sum()))
    case.draft_token_ids[oov] = V - 1
    hostile_forced = case.forced_token_ids.copy()
    free = hostile_forced == -1
    hostile_forced[free] = gen.choice([-1, -7, V, V + 3], int(free.sum()))
    expected, num, _ = rs.sample_case(case)

    def t(x, dtype):
        return None if x is None else torch.tensor(np.asarray(x), dtype=dtype, device=device)

    out = impl.rejection_sample(
        t(case.target_logits, torch.float32),
        t(hostile_drafts, torch.int64),
        t(case.num_draft_tokens, torch.int64),
        draft_probs=t(case.draft_probs, torch.float32),
        temperature=t(case.temperature, torch.float32),
        seeds=t(case.seeds, torch.int64),
        positions=t(case.positions, torch.int64),
        forced_token_ids=t(hostile_forced, torch.int64),
        validate=False,
        backend=backend,
    )
    tokens = out.token_ids.cpu().numpy()
    assert ((tokens == -1) | ((tokens >= 0) & (tokens < V))).all()
    assert tokens.tolist() == expected.tolist() and out.num_emitted.cpu().tolist() == num.tolist()


def _sampler_args(**change):
    args = dict(
        target_logits=torch.zeros(3, 5),
        draft_token_ids=torch.tensor([1]),
        num_draft_tokens=torch.tensor([1, 0]),
        temperature=torch.tensor([0.0, 1.0]),
        seeds=torch.tensor([1, 2]),
        positions=torch.tensor([0, 0]),
    )
    args.update(change)
    return args


@pytest.mark.req("RS-INPUT-3")
@pytest.mark.parametrize(
    "change,message",
    [
        ({"seeds": torch.tensor([1.5, 2.0])}, "seeds must be a torch.Tensor of integer dtype.*float32"),
        ({"seeds": [1, 2]}, r"seeds must be a torch.Tensor.*\[1, 2\] of type list"),
        (
            {"target_logits": np.zeros((3, 5))},
            r"target_logits must be a torch.Tensor of floating dtype; got a numpy.ndarray of dtype float64",
        ),
        ({"target_logits": torch.zeros(3, 5, dtype=torch.int64)}, "target_logits.*floating.*int64"),
        ({"draft_token_ids": torch.tensor([1.0])}, "draft_token_ids.*integer.*float32"),
        ({"num_draft_tokens": torch.tensor([1.0, 0.0])}, "num_draft_tokens.*integer.*float32"),
        ({"num_draft_tokens": torch.tensor([True, False])}, "num_draft_tokens.*integer.*bool"),
        ({"temperature": torch.tensor([0, 1])}, "temperature.*floating.*int64"),
        ({"positions": torch.tensor([0.0, 0.0])}, "positions.*integer.*float32"),
        ({"forced_token_ids": torch.tensor([1.0, -1.0, -1.0])}, "forced_token_ids.*integer.*float32"),
        ({"validate": 0}, "validate must be True or False"),
        ({"max_spec_len": -1}, r"max_spec_len must be an integer >= 0; got -1"),
    ],
)
def test_sampler_arguments_of_the_wrong_type_name_the_argument_and_value(change, message):
    args = _sampler_args(**change)
    with pytest.raises(ValueError, match=message):
        impl.rejection_sample(
            args.pop("target_logits"), args.pop("draft_token_ids"), args.pop("num_draft_tokens"), **args
        )


@pytest.mark.req("AC-COUNT-2", "AC-METRIC-1")
@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: impl.count_emitted_validated(torch.tensor([1, 2]), 5), r"token_ids must be 2-D \[B, W\]"),
        (
            lambda: impl.count_emitted_validated(torch.tensor([[1, 2]]), -5),
            "vocab_size must be an integer >= 1; got -5",
        ),
        (lambda: impl.count_emitted_validated(torch.tensor([[1.0, 2.0]]), 5), "token_ids.*integer.*float32"),
        (
            lambda: impl.AcceptanceStats(4).observe(torch.tensor([1, 2]), torch.tensor([[5, 6, -1]])),
            r"num_draft_tokens must have shape \(1,\)",
        ),
        (
            lambda: impl.AcceptanceStats(4).observe(torch.tensor([-1]), torch.tensor([[5, 6, -1]])),
            r"num_draft_tokens must lie in \[0, max_positions=4\]; got \[-1\]",
        ),
        (lambda: impl.AcceptanceStats(-2), "max_positions must be an integer >= 0; got -2"),
        (
            lambda: impl.AcceptanceStats(4).observe(torch.tensor([1]), torch.tensor([[5, 6]]), torch.tensor([0])),
            r"commit_limits must have shape \(1,\) with every limit >= 1",
        ),
    ],
)
def test_counting_rejects_what_it_would_miscount(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- fuzz: Hypothesis over the kernel API's arguments -------------------------------------------------

HOSTILE_INTS = st.one_of(
    st.integers(-3, 12), st.sampled_from([2**31 - 1, 2**31, 2**40, 2**63 - 1, -(2**31)]), st.integers(-(2**70), 2**70)
)
HOSTILE_VALUES = st.one_of(
    HOSTILE_INTS,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(-2, 12), max_size=3),
)


@st.composite
def batch_updates(draw, size):
    """Mostly well-formed updates of a batch of ``size`` live slots, with hostile values mixed in."""
    slot = st.one_of(st.integers(0, 4), HOSTILE_VALUES) if draw(st.booleans()) else st.integers(0, 4)
    budget = st.one_of(st.none(), st.integers(-1, 3), HOSTILE_INTS)
    prompt = st.one_of(st.lists(st.integers(0, 4), max_size=5), HOSTILE_VALUES)
    added = []
    for index, b, p in draw(st.lists(st.tuples(slot, budget, prompt), max_size=3)):
        try:
            added.append(impl.AddedRequest(index, b, p))
        except ValueError:  # the budget is refused at construction (TB-API-2): nothing to apply
            continue
    moved = draw(
        st.lists(
            st.one_of(st.tuples(slot, slot, st.sampled_from(list(impl.Move))), HOSTILE_VALUES, st.tuples(slot, slot)),
            max_size=2,
        )
    )
    removed = draw(st.lists(slot, max_size=2, unique_by=repr))
    batch_size = draw(st.one_of(st.integers(0, 5), HOSTILE_VALUES)) if draw(st.booleans()) else size
    return impl.BatchUpdate(batch_size, tuple(removed), tuple(added), tuple(moved))


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_fuzz_sync_batch_applies_an_update_whole_or_not_at_all(data):
    state = impl.ThinkingBudgetState(START, END, 5, max_spec_len=2)
    model = tb.BudgetBatch(START, END, 5)
    first = impl.BatchUpdate(3, added=tuple(impl.AddedRequest(i, b, [1] * i) for i, b in enumerate([0, None, 2])))
    state.sync_batch(first)
    model.apply(first)
    for _ in range(3):
        update = data.draw(batch_updates(state.batch_size))
        before = (state.state.clone(), state.batch_size, state.has_tracked_requests())
        try:
            state.sync_batch(update)
        except ValueError as exc:
            assert str(exc)
            assert torch.equal(state.state, before[0])
            assert (state.batch_size, state.has_tracked_requests()) == before[1:]
            continue
        model.apply(update)  # what impl accepted the oracle accepts, with the same result
        assert state.forced_tokens().tolist() == model.forced_rows()


@given(
    st.data(),
    st.sampled_from([torch.float32, torch.float16, torch.int64, torch.bool]),
    st.sampled_from([torch.int64, torch.int32, torch.float32, torch.bool]),
    st.booleans(),
)
@settings(max_examples=120, deadline=None)
def test_fuzz_rejection_sample_raises_a_named_error_or_emits_only_vocabulary_ids(data, logit_dtype, id_dtype, validate):
    """Unvalidated, the layout (``num_draft_tokens`` against the rows) is the caller's contract; ids, values
    and dtypes are hostile either way."""
    V = data.draw(st.integers(1, 6))
    k = data.draw(st.lists(st.integers(-1 if validate else 0, 3), min_size=0, max_size=3))
    rows = sum(max(x, 0) for x in k) + len(k) + (data.draw(st.sampled_from([0, 0, 0, 1])) if validate else 0)
    drafts = data.draw(
        st.lists(
            HOSTILE_INTS.filter(lambda x: -(2**63) <= x < 2**63),
            min_size=sum(max(x, 0) for x in k),
            max_size=sum(max(x, 0) for x in k),
        )
    )
    forced = data.draw(st.one_of(st.none(), st.lists(st.integers(-3, V + 3), min_size=rows, max_size=rows)))
    logits = torch.tensor(np.random.default_rng(0).normal(size=(rows, V))).to(logit_dtype)
    temperature = torch.tensor(
        data.draw(st.lists(st.sampled_from([0.0, 1.0, -1.0, float("nan")]), min_size=len(k), max_size=len(k)))
    )
    try:
        out = impl.rejection_sample(
            logits,
            torch.tensor(drafts, dtype=torch.int64).to(id_dtype),
            torch.tensor(k, dtype=torch.int64),
            temperature=temperature,
            seeds=torch.arange(len(k)),
            forced_token_ids=None if forced is None else torch.tensor(forced),
            validate=validate,
        )
    except ValueError as exc:
        assert str(exc)
        return
    tokens = out.token_ids
    assert bool(((tokens == -1) | ((tokens >= 0) & (tokens < V))).all()), tokens


@pytest.mark.req("TB-SPEC-1", "TB-API-3")
@pytest.mark.parametrize("offset", [2**31, 2**32, 2**40, -(2**32)])
def test_ids_beyond_int32_never_wrap_onto_a_marker(target, offset):
    """Draft and committed ids ``END[i] + offset`` would wrap onto the end marker in int32; no marker holds such
    an id, so they are ordinary thinking tokens, as in the oracle (which matches Python integers)."""
    device, backend = target
    state = impl.ThinkingBudgetState(START, END, 2, max_spec_len=2, device=device, backend=backend)
    model = tb.BudgetBatch(START, END, 2)
    update = impl.BatchUpdate(1, added=(impl.AddedRequest(0, 3, [5, 1]),))
    state.sync_batch(update)
    model.apply(update)
    hostile = [END[0] + offset, END[1] + offset]
    drafts = torch.tensor(hostile, dtype=torch.int64, device=device)
    got = state.forced_tokens(torch.tensor([2], device=device), drafts).cpu().tolist()
    assert got == model.forced_rows([2], hostile) == [-1, -1, -1]
    state.update_state(torch.tensor([hostile + [7]], dtype=torch.int64, device=device))
    model.commit([hostile + [7]])
    assert state.forced_tokens().cpu().tolist() == model.forced_rows() == [END[0]]  # 3 thinking tokens: forced


TOKEN_IDS = st.one_of(
    st.integers(0, 4),
    st.sampled_from([END[0] + 2**31, END[1] + 2**32, START[0] + 2**32, END[0] - 2**32, 2**63 - 1, -(2**63), -2]),
)


@given(st.lists(st.tuples(st.lists(TOKEN_IDS, min_size=4, max_size=4), st.integers(0, 3)), min_size=1, max_size=4))
@settings(max_examples=100, deadline=None)
def test_fuzz_budget_steps_with_any_int64_ids_follow_the_oracle(steps):
    """Drafts and committed tokens anywhere in int64 (ids that wrap onto a marker in int32 included): the forced
    rows before and after every commit are the oracle's."""
    state = impl.ThinkingBudgetState(START, END, 2, max_spec_len=2)
    model = tb.BudgetBatch(START, END, 2)
    update = impl.BatchUpdate(2, added=(impl.AddedRequest(0, 1, [5, 1]), impl.AddedRequest(1, 4, [1])))
    state.sync_batch(update)
    model.apply(update)
    for ids, committed in steps:
        drafts = torch.tensor(ids, dtype=torch.int64)
        assert state.forced_tokens(torch.tensor([2, 2]), drafts).tolist() == model.forced_rows([2, 2], ids)
        rows = [ids[:2][:committed] + [-1] * (3 - committed), ids[2:][:committed] + [-1] * (3 - committed)]
        state.update_state(torch.tensor(rows, dtype=torch.int64))
        model.commit(rows)
        assert state.forced_tokens().tolist() == model.forced_rows()
