"""End to end over HTTP: the embedded reference engine judged by the API-level checks (issue 6)."""

import concurrent.futures

import httpx
import pytest

pytest.importorskip("fastapi", reason="the embedded engine needs fastapi and uvicorn")  # absent on bare GPU images

from specconform.harness import checks, runner  # noqa: E402
from specconform.harness.adapters import embedded_server  # noqa: E402
from specconform.harness.adapters.http import ApiEngine, embedded_profile  # noqa: E402
from specconform.harness.checks.api.replay import violation as _violations  # noqa: E402
from specconform.harness.core import Context  # noqa: E402
from specconform.harness.isolation import EngineProcess  # noqa: E402


@pytest.fixture(scope="module")
def base_url():
    return embedded_server().base_url


@pytest.mark.req(
    "API-BUDGET-1",
    "API-BUDGET-2",
    "API-BUDGET-3",
    "API-BUDGET-4",
    "API-BUDGET-5",
    "API-BUDGET-6",
    "API-BUDGET-7",
    "API-REASON-1",
    "API-USAGE-1",
    "API-USAGE-2",
    "API-STREAM-1",
    "API-ERROR-1",
    "API-ERROR-2",
    "API-SPEC-1",
    "API-SPEC-2",
)
@pytest.mark.parametrize("variant", ["single", "multi"])
def test_embedded_engine_passes_every_api_check(variant):
    engine = EngineProcess(f"embedded:{variant}")  # the engine serves from its own process, as in a run
    selected = runner.select(checks.all_checks(), ["api.*"])
    try:
        records = runner.run_checks(engine, selected, lambda info: Context(profile=info.profile))
    finally:
        engine.stop()
    # the embedded engine reports no speculative-decoding counters (API-SPEC-3)
    expected_precondition = {"api/spec-counters-agree"} | (
        {"api/multi-token-end-marker"} if variant == "single" else set()
    )
    assert {r.check for r in records if r.status == "PRECONDITION_FAILED"} == expected_precondition
    assert [
        (r.check, r.status, r.message[:300]) for r in records if r.status not in ("PASS", "PRECONDITION_FAILED")
    ] == []
    other = "multi" if variant == "single" else "single"  # the version names the models judged, not every one served
    assert f"tiny-think-{variant}" in records[0].engine_version and other not in records[0].engine_version


def test_64_concurrent_clients_get_their_own_responses(base_url):
    """Mixed budgets, seeds and models; every response equals a sequential run of the same request."""
    engine = ApiEngine(base_url, embedded_profile("multi"))
    budgets = [None, 0, 1, 2, 3, 5, 8, 13]
    models = [engine.api.model, engine.api.spec_model]

    def ask(i):
        return engine.complete(models[i % 2], budgets[i % len(budgets)], max_tokens=12, temperature=1.0, seed=1000 + i)

    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        together = list(pool.map(ask, range(64)))
    for i, response in enumerate(together):
        alone = ask(i)
        assert response["choices"][0]["token_ids"] == alone["choices"][0]["token_ids"], i
        assert response["choices"][0]["message"] == alone["choices"][0]["message"], i
        assert (
            _violations(
                engine, response["prompt_token_ids"], response["choices"][0]["token_ids"], budgets[i % len(budgets)]
            )
            == ""
        )


@pytest.mark.parametrize(
    "body,field",
    [
        (
            {"model": "tiny-think-single", "messages": [{"role": "user", "content": "x"}], "thinking_token_budget": -2},
            "thinking_token_budget",
        ),
        (
            {
                "model": "tiny-think-single",
                "messages": [{"role": "user", "content": "x"}],
                "thinking_token_budget": "3",
            },
            "thinking_token_budget",
        ),
        (
            {"model": "tiny-plain-single", "messages": [{"role": "user", "content": "x"}], "thinking_token_budget": 3},
            "thinking_token_budget",
        ),
        ({"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "tiny-think-single", "messages": "hello"}, "messages"),
        ({"model": "tiny-think-single", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "max_tokens"),
        (
            {"model": "tiny-think-single", "messages": [{"role": "user", "content": "x"}], "temperature": -1},
            "temperature",
        ),
        ([1, 2, 3], "body"),
    ],
)
def test_invalid_requests_get_400_naming_the_field(base_url, body, field):
    response = httpx.post(f"{base_url}/chat/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == field and field.split("_")[0] in response.json()["error"]["message"]


def test_malformed_json_gets_400(base_url):
    response = httpx.post(
        f"{base_url}/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"]["param"] == "body"


def test_models_health_and_completions(base_url):
    root = base_url.rsplit("/v1", 1)[0]
    assert httpx.get(f"{root}/health").json() == {"status": "ok"}
    names = {m["id"] for m in httpx.get(f"{base_url}/models").json()["data"]}
    assert {"tiny-think-single", "tiny-think-multi-spec", "tiny-plain-multi"} <= names
    response = httpx.post(
        f"{base_url}/completions",
        json={"model": "tiny-think-single", "prompt": "so the", "max_tokens": 5, "temperature": 0, "logprobs": True},
    ).json()
    assert response["usage"]["completion_tokens"] == 5 and len(response["choices"][0]["logprobs"]["content"]) == 5
    assert all(entry["logprob"] <= 0 for entry in response["choices"][0]["logprobs"]["content"])
