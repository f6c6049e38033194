"""Minimal reproductions: a failing batch scenario shrinks to a 1-minimal one (removing any single
element loses the failure); every kind of reproduction a failing engine leaves replays on its own with
the same verdict, and a conforming engine replays it as PASS."""

import json
import re
from dataclasses import replace

import httpx2
import pytest

from specconform.harness import checks, reproductions
from specconform.harness.adapters import http as api
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.adapters.zoo import MUTANTS, MutantEngine
from specconform.harness.cases.budget import BudgetScenario, single_removals, unreachable
from specconform.harness.checks.api import twins
from specconform.harness.checks.budget import replay_scenario
from specconform.harness.checks.budget.minimal import minimal_scenario, still_diverges
from specconform.harness.core import FAIL, Context
from specconform.harness.vectors import SlotStep
from specconform.specs.interface import AddedRequest, BatchUpdate, Move
from tests.harness.test_api_spec_counters import route_clients

REQUIREMENTS = ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5")


def _free(*tokens: int) -> tuple[SlotStep, ...]:
    return tuple(SlotStep([], 0, t) for t in tokens)


def _noisy_batch_scenario() -> BudgetScenario:
    """Six requests over eight steps with removals, adds, SWAPs, drafts and long prompts, of which the
    bug needs one UNIDIRECTIONAL move of a tracked request onto an occupied slot."""
    start, end = (0,), (1, 2)
    open_prompt = (3, 3, 0, 3)
    steps = [
        (
            BatchUpdate(
                4,
                added=(
                    AddedRequest(0, 5, open_prompt),
                    AddedRequest(1, None, (3, 3, 3)),
                    AddedRequest(2, 0, (3, 3)),
                    AddedRequest(3, 7, (3, 0)),
                ),
            ),
            _free(3, 3, 3, 3),
        ),
        (None, (SlotStep([3, 3], 1, 3), SlotStep([3], 0, 3), SlotStep([], 0, 3), SlotStep([3, 3, 3], 2, 3))),
        (BatchUpdate(4, moved=((0, 3, Move.SWAP),)), _free(3, 3, 3, 3)),
        (BatchUpdate(5, added=(AddedRequest(4, 2, (3, 3, 0)),)), _free(3, 3, 3, 3, 3)),
        (None, _free(3, 3, 0, 3, 3)),  # slot 2 opens a section with budget 0: E is forced next
        (BatchUpdate(4, moved=((2, 1, Move.UNIDIRECTIONAL), (4, 2, Move.UNIDIRECTIONAL))), _free(3, 3, 3, 3)),
        (None, (SlotStep([3], 1, 3), SlotStep([3, 3], 2, 3), SlotStep([], 0, 3), SlotStep([3], 0, 3))),
        (BatchUpdate(3, removed=(0,), moved=((3, 0, Move.UNIDIRECTIONAL),)), _free(3, 3, 3)),
    ]
    return BudgetScenario(start, end, "request", 8, tuple(steps))


def test_a_failing_batch_scenario_shrinks_to_a_1_minimal_one():
    engine = MutantEngine(next(m for m in MUTANTS if m.name == "move-keeps-occupied-destination"))
    scenario = _noisy_batch_scenario()
    assert unreachable(scenario) is None
    vector = scenario.vector("noisy", list(REQUIREMENTS))
    vector["max_spec_len"] = 3
    divergence = replay_scenario(engine, vector, REQUIREMENTS)
    assert divergence is not None
    minimal = minimal_scenario(engine, scenario, 3)
    still_fails = still_diverges(engine, 3)
    assert still_fails(minimal)
    assert minimal.size < scenario.size
    removals = [c for c in single_removals(minimal) if c is not None]
    assert removals, "a scenario has elements to remove"
    assert not [c for c in removals if still_fails(c)]
    moves = [m for u, _ in minimal.steps if u is not None for m in u.moved]
    assert [kind for _, _, kind in moves] == [Move.UNIDIRECTIONAL]  # the one move the bug needs


def _statistical_only(profile):
    """``profile`` without the reference draws: its sampled rows cannot be compared exactly, so the statistics judge
    them (with the draws, the exact pass before the statistics finds the same mutant first)."""
    return replace(profile, capabilities=profile.capabilities - {"reference-draws"})


def _check(name: str):
    return next(c for c in checks.all_checks() if c.name == name)


def test_a_failing_distribution_check_leaves_a_statistical_reproduction_that_replays():
    engine = MutantEngine(next(m for m in MUTANTS if m.name == "always-accept"))
    ctx = Context(profile=_statistical_only(engine.profile), trials=4000, deviation=0.2)
    outcome = _check("rejection/distribution").run(engine, ctx)
    statistical = ("RS-PROB-5", "RS-PROB-6")  # the laws the test judges (an input the mutant rejects is exact)
    failed = {rid: r for rid, r in outcome.requirements.items() if r.status == FAIL and rid in statistical}
    assert set(failed) == set(statistical)
    for rid, result in failed.items():
        document = json.loads(json.dumps(result.reproduction))  # as written to and read from a file
        assert document["fingerprint"] == result.fingerprint
        entry = document["sampled_drafts"][0]
        assert entry["requirements"][0] == rid
        assert {"seed", "trials", "alpha_test", "deviation", "power", "q", "target_logits"} <= set(entry)
        assert len(entry["observed_position_marginals"]) == len(entry["expected_position_marginals"])
        assert document["minimal_shape"]["K"] < document["original_shape"]["K"]  # every draft is accepted at K = 1
        assert [r.fingerprint for r in reproductions.replay(engine, document)] == [result.fingerprint]
        assert [r.fingerprint for r in reproductions.replay(OracleEngine(), document)] == [""]


START, END, WORD = 50, 51, 7


def _server(honours_budget: bool) -> httpx2.MockTransport:
    """A vLLM-like server whose prompt opens a section; it thinks in WORDs and, when ``honours_budget``,
    closes the section with END once the budget is spent."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": "tiny-think"}]})
        if request.url.path == "/version":
            return httpx2.Response(404)
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": {"<think>": [START], "</think>": [END]}[body["prompt"]]})
        budget = body.get("thinking_token_budget")
        ids = [WORD] * body["max_tokens"]
        if honours_budget and budget is not None and budget < len(ids):
            ids[budget] = END
        message = {"role": "assistant", "content": "", "reasoning": "w"}
        return httpx2.Response(
            200,
            json={
                "choices": [{"index": 0, "message": message, "finish_reason": "length", "token_ids": ids}],
                "prompt_token_ids": [1, START],
                "usage": {"prompt_tokens": 2, "completion_tokens": len(ids)},
            },
        )

    return httpx2.MockTransport(handle)


def _api_engine(monkeypatch, honours_budget: bool) -> api.ApiEngine:
    route_clients(monkeypatch, _server(honours_budget))
    profile = api.ApiProfile(name="vllm", model="tiny-think", **api.API_PROFILES["vllm"])
    return api.ApiEngine("http://think.test/v1", profile, name="fake")


def test_a_failing_api_check_leaves_a_reproduction_with_curl_requests_that_replays(monkeypatch, tmp_path):
    engine = _api_engine(monkeypatch, honours_budget=False)
    check = _check("api/budget-zero-and-one")
    result = check.run(engine, Context(profile=engine.profile))
    assert result.status == FAIL
    document = result.requirements["API-BUDGET-4"].reproduction
    assert document["kind"] == "api" and document["fingerprint"] == "API-BUDGET-4/forced-position-not-honoured"
    # budgets 0 and 1 × 3 seeds, each failing request followed by its repeats alone (RUN-FINDING-1: they agree, so
    # the failure stays the check's own)
    assert len(document["requests"]) == 6 * (1 + twins.REPEATS)
    first = document["requests"][0]
    assert first["curl"].startswith("curl -s http://think.test/v1/chat/completions")
    assert '"thinking_token_budget": 0' in first["curl"]
    assert first["response"]["choices"][0]["token_ids"][0] == WORD  # what the engine answered
    path = tmp_path / "repro.json"
    path.write_text(json.dumps(document))
    loaded = reproductions.load(path)
    assert [r.fingerprint for r in reproductions.replay(engine, loaded)] == [document["fingerprint"]]
    conforming = _api_engine(monkeypatch, honours_budget=True)
    assert [r.fingerprint for r in reproductions.replay(conforming, loaded)] == [""]


def test_a_failing_acceptance_rule_test_leaves_a_reproduction_that_replays_alone():
    engine = MutantEngine(next(m for m in MUTANTS if m.name == "acceptance-ratio-squared"))
    outcome = _check("rejection/acceptance-rule").run(
        engine, Context(profile=_statistical_only(engine.profile), trials=2000)
    )
    result = outcome.requirements["RS-PROB-1"]
    assert result.status == FAIL
    document = json.loads(json.dumps(result.reproduction))
    entry = document["acceptance_rule"][0]
    assert document["fingerprint"] == result.fingerprint == "RS-PROB-1/acceptance-rate"
    assert entry["layout"] == "homogeneous" and entry["observed_counts"]["acceptance-rate"]
    assert [r.fingerprint for r in reproductions.replay(engine, document)] == [result.fingerprint]
    assert [r.fingerprint for r in reproductions.replay(OracleEngine(), document)] == [""]


def test_a_check_reproduction_re_runs_the_check_at_its_seed(tmp_path):
    path = tmp_path / "draws.json"
    document = {
        "format": 1,
        "kind": "check",
        "check": "rejection/counter-based-draws",
        "requirement": "RS-RNG-1",
        "seed": 20261121,
    }
    path.write_text(json.dumps(document))
    loaded = reproductions.load(path)
    stateful = MutantEngine(next(m for m in MUTANTS if m.name == "stateful-generator"))
    assert [r.fingerprint for r in reproductions.replay(stateful, loaded)] == ["RS-RNG-1/draws-depend-on-call-history"]
    assert [r.fingerprint for r in reproductions.replay(OracleEngine(), loaded)] == [""]
    path.write_text(json.dumps({k: v for k, v in document.items() if k != "seed"}))
    with pytest.raises(ValueError, match="a check reproduction lacks 'seed'"):
        reproductions.load(path)


def test_an_api_reproduction_runs_its_before_checks_first_against_the_same_engine(monkeypatch, tmp_path):
    """A stand-in server that stops honouring budgets once it has served ``api/usage``'s 20-token requests
    (the state an earlier check leaves): its reproduction fails only when ``before`` names that check."""
    seen = []
    honouring, ignoring = _server(honours_budget=True), _server(honours_budget=False)

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/chat/completions":
            seen.append(json.loads(request.content)["max_tokens"])
        return (ignoring if 20 in seen else honouring).handler(request)

    route_clients(monkeypatch, httpx2.MockTransport(handle))
    profile = api.ApiProfile(name="vllm", model="tiny-think", **api.API_PROFILES["vllm"])
    engine = api.ApiEngine("http://think.test/v1", profile, name="fake")
    document = {"format": 1, "kind": "api", "check": "api/budget-zero-and-one", "requirement": "API-BUDGET-4"}
    document |= {"seed": 7, "requests": []}
    path = tmp_path / "repro.json"
    path.write_text(json.dumps(document))
    assert [r.fingerprint for r in reproductions.replay(engine, reproductions.load(path))] == [""]
    assert 20 not in seen
    seen.clear()
    path.write_text(json.dumps(document | {"before": ["api/usage"]}))
    replayed = reproductions.replay(engine, reproductions.load(path))
    assert [r.fingerprint for r in replayed] == ["API-BUDGET-4/forced-position-not-honoured"]
    assert seen[0] == 20 and seen[-1] != 20  # usage's requests came first, the check's last
    for bad in ("api/usage", ["api/no-such-check"]):
        path.write_text(json.dumps(document | {"before": bad}))
        with pytest.raises(ValueError, match=re.escape(f"before must be a list of known check names; got {bad!r}")):
            reproductions.load(path)
