"""The shared case strategies reach every class of case they promise, only reachable ones, the same
for the same seed; a failing generated check leaves a minimal reproduction that replays on its own."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from specconform.harness import checks, cli, reproductions
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.cases import draw
from specconform.harness.cases.budget import BudgetScenario, scenarios, unreachable
from specconform.harness.cases.rejection import VOCABS, RejectionFamily, draft_kind, rejection_cases
from specconform.harness.core import Context
from specconform.specs.interface import Move

FAMILIES = {check.name: check.run.family for check in checks.kernel_checks() if hasattr(check.run, "family")}
BATCH = FAMILIES["budget/batch"]
SEARCH = settings(max_examples=3000, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))


def _moves_onto_occupied(scenario: BudgetScenario) -> list[str]:
    """The kinds of operation in the scenario that land on a slot holding a live request."""
    live: set[int] = set()
    found = []
    for update, _ in scenario.steps:
        if update is None:
            continue
        live -= set(update.removed)
        for added in update.added:
            if added.index in live:
                found.append("add")
            live.add(added.index)
        for src, dst, kind in update.moved:
            if kind is Move.UNIDIRECTIONAL and dst in live:
                found.append("unidirectional")
            if kind is Move.UNIDIRECTIONAL:
                live.discard(src)
                live.add(dst)
            else:
                found.append("swap")
    return found


@pytest.mark.parametrize(
    "name,condition",
    [
        ("an UNIDIRECTIONAL move onto an occupied slot", lambda s: "unidirectional" in _moves_onto_occupied(s)),
        ("an add onto an occupied slot (removal not announced)", lambda s: "add" in _moves_onto_occupied(s)),
        ("a SWAP", lambda s: "swap" in _moves_onto_occupied(s)),
        ("a batch of more than 128 requests", lambda s: any(u and u.batch_size > 128 for u, _ in s.steps)),
        ("max_num_reqs of 1", lambda s: s.max_num_reqs == 1),
        (
            "a budget of at least 2^30",
            lambda s: any(
                u and any(isinstance(a.budget, int) and a.budget >= 2**30 for a in u.added) for u, _ in s.steps
            ),
        ),
        (
            "drafting and zero-draft slots in one step",
            lambda s: any(any(p.drafts for p in slots) and any(not p.drafts for p in slots) for _, slots in s.steps),
        ),
        ("a multi-token self-overlapping end marker", lambda s: len(s.end) == 2 and s.end[0] == s.end[1]),
    ],
)
def test_the_batch_family_reaches(name, condition):
    assert find(scenarios(BATCH, "request"), condition, settings=SEARCH)


@given(scenario=scenarios(BATCH, "request"))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_generated_scenario_is_reachable(scenario):
    assert unreachable(scenario) is None
    scenario.vector("reachable", [])  # the oracle accepts every update


def test_every_catalogue_family_generates_reachable_scenarios_only():
    assert len(FAMILIES) == 9  # with the forced-phrase and other-end-markers families (TB-END-*)
    for family in FAMILIES.values():
        for scenario in draw(scenarios(family, "section"), 7, 15):
            assert unreachable(scenario) is None, (family, unreachable(scenario))


def test_unreachable_names_drafts_before_output_and_shared_marker_ids():
    scenario = list(draw(scenarios(BATCH, "request"), 3, 2))[1]
    update, slots = scenario.steps[0]
    early = slots[0].__class__([1], 1, 0)  # drafts in the step that adds the request
    bad = BudgetScenario(
        scenario.start, scenario.end, "request", scenario.max_num_reqs, ((update, (early,) + slots[1:]),)
    )
    assert "before its request has any output" in unreachable(bad)
    shared = BudgetScenario((1,), (1, 2), "request", scenario.max_num_reqs, scenario.steps)
    assert "share ids" in unreachable(shared)


def test_draws_are_deterministic_per_seed():
    family = RejectionFamily(draft_probs="given")
    first, again, other = (list(draw(rejection_cases(family), seed, 6)) for seed in (11, 11, 12))
    assert all(np.array_equal(a.target_logits, b.target_logits) for a, b in zip(first, again))
    assert not all(
        a.target_logits.shape == b.target_logits.shape and np.array_equal(a.target_logits, b.target_logits)
        for a, b in zip(first, other)
    )


CASE_SEARCH = settings(
    max_examples=500, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
)
GIVEN_Q = RejectionFamily(draft_probs="given", greedy="none")


@pytest.mark.parametrize("kind", ["q-zero-at-draft", "empty-residual", "q-with-zeros", "one-hot-q", "from-q"])
def test_rejection_cases_reach_every_draft_kind(kind):
    case = find(
        rejection_cases(GIVEN_Q),
        lambda c: any(draft_kind(c, j) == kind for j in range(len(c.draft_token_ids))),
        settings=CASE_SEARCH,
    )
    case.validate()


@pytest.mark.parametrize("vocab", [262_144, 131_071, 4097, 1])
def test_rejection_cases_reach_vocabularies_from_one_to_262144(vocab):
    assert find(rejection_cases(RejectionFamily(vocabs=VOCABS)), lambda c: c.vocab_size == vocab, settings=CASE_SEARCH)


def test_rejection_cases_reach_ties_masks_and_zero_draft_requests():
    family = RejectionFamily(greedy="all", ties=True)
    assert find(rejection_cases(family), lambda c: checks.rejection.has_tie(c.target_logits), settings=CASE_SEARCH)
    assert find(rejection_cases(family), lambda c: np.isneginf(c.target_logits).any(), settings=CASE_SEARCH)
    assert find(
        rejection_cases(family),
        lambda c: 0 in c.num_draft_tokens.tolist() and c.num_draft_tokens.max() > 0,
        settings=CASE_SEARCH,
    )


def test_a_failing_budget_check_leaves_a_minimal_reproduction_that_replays(tmp_path, capsys):
    mutant = "zoo:budget-off-by-one"
    argv = ["run", "--engine", mutant, "--check", "budget/scope-request", "--report-dir", str(tmp_path), "--quiet"]
    assert cli.main(argv) == 1
    run_dir = next(tmp_path.iterdir())
    record = json.loads((run_dir / "results.jsonl").read_text().splitlines()[0])
    # an off-by-one count needs no re-opened section: the check records it under the requirement its minimal case
    # shows, and its own TB-SCOPE-1 reads BLOCKED
    assert record["results"]["TB-SCOPE-1"]["status"] == "BLOCKED"
    (result,) = [r for r in record["results"].values() if r["status"] == "FAIL"]
    path = run_dir / result["reproduction"]
    document = json.loads(path.read_text())
    assert document["fingerprint"] == result["fingerprint"]
    assert document["minimal_size"] < document["original_size"]
    assert len(document["scenarios"][0]["steps"]) < 40
    assert result["reproduction"] in result["evidence"] and "S=" in result["evidence"]
    capsys.readouterr()
    assert cli.main(["replay", str(path), "--engine", mutant]) == 1
    assert f"FAIL {result['fingerprint']} (as recorded)" in capsys.readouterr().out
    assert cli.main(["replay", str(path), "--engine", "oracle"]) == 0
    assert cli.main(["replay", str(path), "--engine", "reference"]) == 0


@pytest.mark.parametrize(
    "content,message",
    [
        ("{", "not JSON"),
        ('{"kind": "nope"}', "kind must be one of"),
        ('{"kind": "thinking-budget", "scenarios": []}', "scenarios must be a non-empty list"),
        ('{"kind": "thinking-budget", "scenarios": [{"name": "x"}]}', "lacks 'requirements'"),
    ],
)
def test_replay_rejects_a_bad_file_in_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert cli.main(["replay", str(path), "--engine", "oracle"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


class _GreedyOffByOne(OracleEngine):
    """Greedy requests with two or more drafts emit the token after the argmax as their last token."""

    def rejection_sample(self, case):
        tokens, num = super().rejection_sample(case)
        tokens = np.array(tokens)
        for i, k in enumerate(case.num_draft_tokens):
            if k >= 2 and case.temperature[i] == 0 and case.vocab_size > 2:
                tokens[i, num[i] - 1] = (tokens[i, num[i] - 1] + 1) % case.vocab_size
        return tokens, num


def test_a_failing_exact_rejection_check_leaves_a_smaller_reproduction(tmp_path, capsys):
    engine = _GreedyOffByOne()
    check = next(c for c in checks.kernel_checks() if c.name == "rejection/greedy")
    outcome = check.run(engine, Context(profile=engine.profile))
    failed = {rid: r for rid, r in outcome.requirements.items() if r.status == "FAIL"}
    assert failed
    for result in failed.values():
        document = result.reproduction
        assert document["fingerprint"] == result.fingerprint
        assert document["minimal_size"] <= document["original_size"]
        assert document["exact"][0]["case"]["num_draft_tokens"] == [2]  # the bug needs one request with two drafts
        assert [r.fingerprint for r in reproductions.replay(engine, document)] == [result.fingerprint]
        assert [r.fingerprint for r in reproductions.replay(OracleEngine(), document)] == [""]
