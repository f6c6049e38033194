"""The budget meeting other request features (specs/openai-api.md §5: API-TRUNC-1, API-N-1, API-NOTHINK-1,
API-LOGPROB-1), judged against a scripted stand-in for a vLLM-style server (httpx2.MockTransport).

The stand-in honours a budget on a prompt-opened section with a two-token end marker; each mutation
breaks one requirement the way an engine could, and its check must FAIL it while the honest server
PASSes. The embedded engine's own runs of these checks are in tests/e2e/test_embedded_engine.py."""

import json

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.checks.api import utf8
from specconform.harness.core import BLOCKED, FAIL, PASS, Context
from specconform.harness.profiles import canonical
from tests.harness.test_api_spec_counters import route_clients

START, END, NEWLINE, THINK, ANSWER = 50, [51, 52], 9, 7, 8
LEAD, CONTINUATION = 60, 61  # the two bytes of "é" as byte-level tokens: the first ends inside a character
PHRASE_TEXT, PHRASE = "Time to answer.</think>", [70, 71]  # a transition phrase forced before the end marker
TOKENS = {"<think>": [START], "</think>": END, PHRASE_TEXT: [*PHRASE, *END]}
BYTES = {START: b"<think>", 51: b"</", 52: b"think>", NEWLINE: b"\n", THINK: b"t", ANSWER: b"a", LEAD: b"\xc3"}
BYTES |= {CONTINUATION: b"\xa9", 70: b"Time to", 71: b" answer."}
# what follows the lead byte before the forced end marker, by mutation: an engine that waits for the character,
# and one that waits for a token whose own piece ends on a complete character (a continuation byte never does)
WAIT = {"waits-for-the-character": [CONTINUATION], "waits-for-a-complete-piece": [CONTINUATION] * 4}
THINKING_PROMPT = [1, 2, 3, START, NEWLINE]  # the newline after the start marker spends one budget token
CLOSED_PROMPT = [1, 2, 3, START, NEWLINE, *END, NEWLINE]  # enable_thinking false: the prompt closes the section


def _generate(body: dict, mutation: str) -> tuple[list[int], list[int], str]:
    """``(prompt ids, output ids, finish reason)`` of one choice."""
    budget, n = body.get("thinking_token_budget"), body["max_tokens"]
    thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
    if not thinking:
        ids = [ANSWER] * n
        if mutation == "closed-section-budgeted" and budget is not None:
            ids = ([ANSWER] * budget + END + [ANSWER] * n)[:n]  # counts the answer as thinking and closes again
        return CLOSED_PROMPT, ids, "length"
    if budget is None:
        return THINKING_PROMPT, [THINK] * n, "length"
    thinking = [THINK] * max(budget - 2, 0) + [LEAD] * (budget >= 2)  # the budget runs out inside "é"
    if mutation == "overrun-on-a-character":
        thinking = [THINK] * budget  # one token too many, on a character: no UTF-8 wait plays a part
    end = [*PHRASE, *END] if mutation == "forces-a-phrase" else END
    if mutation == "grammar-masks-forced-token" and body.get("response_format"):
        end = [ANSWER]  # a JSON grammar applied inside the section forbids "</think>"
    ids = thinking + WAIT.get(mutation, []) + end + [ANSWER] * n
    finish = "length"
    if mutation == "truncation-reported-as-stop" and max(budget - 1, 0) < n < max(budget - 1, 0) + len(END):
        finish = "stop"  # a cut inside the forced marker taken for a stop
    return THINKING_PROMPT, ids[:n], finish


def _server_ends_inside(text: bytes) -> bool:
    """llama-server's own test (validate_utf8, tools/server/server-common.cpp): a lead byte among the last 4
    with fewer bytes after it than its character needs."""
    for back in range(1, min(4, len(text)) + 1):
        byte = text[-back]
        need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 0
        if need and back < need:
            return True
    return False


def _merged_entries(ids: list[int], logprob) -> list[dict]:
    """Logprobs merged per character, as llama-server gives them: a token after which the generated text ends
    inside a character gets no entry; the next entry carries the bytes of all of them and its own id."""
    entries, generated, pending = [], b"", b""
    for token in ids:
        generated += BYTES[token]
        pending += BYTES[token]
        if not _server_ends_inside(generated):
            entries.append({"id": token, "token": "", "logprob": logprob(token), "bytes": list(pending)})
            entries[-1]["top_logprobs"] = []
            pending = b""
    return entries


def _choice(index, prompt, ids, finish, body, mutation, merged=False):
    closed = any(ids[i : i + len(END)] == END for i in range(len(ids)))
    cut = next((i for i in range(len(ids)) if ids[i : i + len(END)] == END), len(ids))
    message = {
        "role": "assistant",
        "content": "a" * (len(ids) - cut - len(END)) if closed else "",
        "reasoning": "t" * cut,
    }
    if closed and mutation == "end-marker-in-content":
        message["content"] = "</think>" + message["content"]  # the closing marker handed to the content
    if closed and mutation == "end-marker-in-reasoning":
        message["reasoning"] += "</think>"
    choice = {"index": index, "message": message, "finish_reason": finish, "token_ids": ids}
    if body.get("logprobs"):
        forced_value = float("-inf") if mutation == "forced-logprob-minus-inf" else -0.5
        if merged:
            choice["logprobs"] = {"content": _merged_entries(ids, lambda t: forced_value if t in END else -1.5)}
            return choice
        entries = [
            {
                "token": str(t),
                "logprob": forced_value if t in END else -1.5,
                "bytes": list(BYTES[t]),
                "top_logprobs": [],
            }
            for t in ids
        ]
        choice["logprobs"] = {"content": entries}
    return choice


def fake_server(mutation: str = "", merged: bool = False):
    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": "tiny"}]})
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": TOKENS[body["prompt"]]})
        n = body.get("n") or 1
        refused = n > 1 and mutation == "n-refused-without-naming-it"
        refused |= bool(body.get("response_format")) and mutation == "structured-output-refused-unnamed"
        if refused:
            return httpx2.Response(400, json={"error": {"message": "unsupported request", "type": "BadRequestError"}})
        prompt, ids, finish = _generate(body, mutation)
        count = 1 if mutation == "n-ignored" else n
        choices = [_choice(i, prompt, ids, finish, body, mutation, merged) for i in range(count)]
        reasoning = sum(1 for t in ids if t in (THINK, LEAD, CONTINUATION))  # an open section's forced tokens too:
        open_section = prompt == THINKING_PROMPT and not any(ids[i : i + len(END)] == END for i in range(len(ids)))
        if open_section and mutation != "reasoning-tokens-leave-out-forced":
            reasoning = len(ids)
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": len(ids),
            "total_tokens": len(prompt) + len(ids),
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
        response = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": choices,
            "usage": usage,
            "prompt_token_ids": prompt,
        }
        # json.dumps writes -inf as -Infinity, which Python's JSON readers (the openai client's) accept
        return httpx2.Response(200, text=json.dumps(response), headers={"content-type": "application/json"})

    return httpx2.MockTransport(handle)


def judge(monkeypatch, check_name: str, mutation: str = "", merged: bool = False, **profile):
    """``check_name``'s outcome on the stand-in with ``mutation``; ``merged``: its logprobs merged per character."""
    route_clients(monkeypatch, fake_server(mutation, merged))
    engine = api.ApiEngine("http://fake.test/v1", api.ApiProfile(name="fake", model="tiny", **profile), name="fake")
    check = next(c for c in checks.api_checks() if c.name == check_name)
    return check.run(engine, Context(canonical()))


@pytest.mark.parametrize(
    "check_name",
    [
        "api/truncated-end-marker",
        "api/n-choices",
        "api/budget-without-thinking",
        "api/forced-logprobs",
        "api/utf8-boundary",
        "api/budget-with-structured-output",
        "api/budget-holds",
    ],
)
def test_the_honest_server_passes(monkeypatch, check_name):
    outcome = judge(monkeypatch, check_name)
    assert outcome.status == PASS, outcome.message
    assert all(result.cases for result in outcome.requirements.values())


@pytest.mark.parametrize(
    "check_name, mutation, requirement, mode",
    [
        ("api/truncated-end-marker", "truncation-reported-as-stop", "API-TRUNC-1", "finish-reason-not-length"),
        ("api/truncated-end-marker", "reasoning-tokens-leave-out-forced", "API-TRUNC-1", "reasoning-tokens"),
        ("api/n-choices", "n-ignored", "API-N-1", "fewer-choices"),
        ("api/n-choices", "n-refused-without-naming-it", "API-N-1", "400-does-not-name-n"),
        ("api/budget-without-thinking", "closed-section-budgeted", "API-NOTHINK-1", "closed-section-budgeted"),
        ("api/forced-logprobs", "forced-logprob-minus-inf", "API-LOGPROB-1", "forced-logprob-not-raw"),
        ("api/utf8-boundary", "waits-for-the-character", "API-UTF-1", "waited-for-the-character"),
        (
            "api/budget-with-structured-output",
            "grammar-masks-forced-token",
            "API-GRAMMAR-1",
            "forced-position-constrained",
        ),
        (
            "api/budget-with-structured-output",
            "structured-output-refused-unnamed",
            "API-GRAMMAR-1",
            "400-does-not-name-response-format",
        ),
        ("api/utf8-boundary", "waits-for-a-complete-piece", "API-UTF-1", "overran-past-the-character"),
        ("api/budget-holds", "end-marker-in-content", "API-REASON-1", "end-marker-in-content"),
        ("api/budget-holds", "end-marker-in-reasoning", "API-REASON-1", "end-marker-in-reasoning"),
    ],
)
@pytest.mark.req(
    "API-TRUNC-1", "API-N-1", "API-NOTHINK-1", "API-LOGPROB-1", "API-UTF-1", "API-GRAMMAR-1", "API-REASON-1"
)
def test_each_mutation_fails_its_requirement(monkeypatch, check_name, mutation, requirement, mode):
    declared = {"utf8_boundary": "complete-character"} if mutation == "waits-for-a-complete-piece" else {}
    outcome = judge(monkeypatch, check_name, mutation, **declared)
    assert outcome.status == FAIL, outcome.message
    assert outcome.requirements[requirement].status == FAIL
    assert outcome.requirements[requirement].fingerprint.startswith(f"{requirement}/{mode}")


def test_a_processed_declaration_fails_raw_logprobs_of_forced_tokens(monkeypatch):
    outcome = judge(monkeypatch, "api/forced-logprobs", forced_logprobs="processed")
    assert outcome.requirements["API-LOGPROB-1"].fingerprint == "API-LOGPROB-1/forced-logprob-not-processed"


def test_an_unknown_forced_logprobs_declaration_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="forced_logprobs must be one of raw, processed; got 'cooked'"):
        api.ApiProfile(name="fake", model="tiny", forced_logprobs="cooked")


def test_waiting_for_the_character_passes_when_the_profile_declares_it(monkeypatch):
    outcome = judge(monkeypatch, "api/utf8-boundary", "waits-for-the-character", utf8_boundary="complete-character")
    assert outcome.status == PASS, outcome.message
    assert outcome.requirements["API-UTF-1"].cases > 0


@pytest.mark.parametrize(
    "data, inside",
    [
        (b"", False),
        (b"a", False),
        (b"\xc3", True),
        (b"\xc3\xa9", False),
        (b"\xe2\x82", True),
        (b"\xe2\x82\xac", False),
        (b"\xf0\x9f\x98", True),
        (b"\xf0\x9f\x98\x80", False),
        (b"\xa9", False),  # a stray continuation byte is no character
        (b"a\xa9\xa9\xa9", False),
        (b"\xff", False),  # bytes that lead no character are none either
        (b"\xf5\x80", False),
        (b"\xc0", False),
        (b"\xf4\x8f", True),
    ],
)
def test_ends_inside_character(data, inside):
    assert utf8.ends_inside_character(data) is inside


@pytest.mark.parametrize("check_name", ["api/budget-holds", "api/truncated-end-marker"])
def test_a_declared_forced_phrase_is_judged_as_the_forced_sequence(monkeypatch, check_name):
    declared = judge(monkeypatch, check_name, "forces-a-phrase", forced_end_text=PHRASE_TEXT)
    assert declared.status == PASS, declared.message
    undeclared = judge(monkeypatch, check_name, "forces-a-phrase")
    assert undeclared.status == FAIL, undeclared.message


def test_budget_holds_honours_a_declared_utf8_boundary(monkeypatch):
    """api/budget-holds reads the tokens' bytes when the profile declares complete-character (API-UTF-1)."""
    declared = judge(monkeypatch, "api/budget-holds", "waits-for-the-character", utf8_boundary="complete-character")
    assert declared.status == PASS, declared.message
    undeclared = judge(monkeypatch, "api/budget-holds", "waits-for-the-character")
    assert undeclared.requirements["API-BUDGET-2"].status == FAIL
    beyond = judge(monkeypatch, "api/budget-holds", "waits-for-a-complete-piece", utf8_boundary="complete-character")
    assert beyond.requirements["API-BUDGET-2"].fingerprint == "API-BUDGET-2/forced-position-not-honoured"


WAITING_CHECKS = ["api/utf8-boundary", "api/budget-holds", "api/budget-binds", "api/truncated-end-marker"]


@pytest.mark.parametrize("check_name", WAITING_CHECKS)
@pytest.mark.req("API-UTF-1")
def test_a_declared_wait_is_read_from_logprobs_merged_per_character(monkeypatch, check_name):
    """Logprobs merged per character (llama-server's form) place the characters: a wait for the character
    within the declared bound conforms, judged in every budget check."""
    outcome = judge(monkeypatch, check_name, "waits-for-the-character", merged=True, utf8_boundary="complete-character")
    assert outcome.status == PASS, outcome.message
    assert all(result.cases for result in outcome.requirements.values())


@pytest.mark.parametrize(
    "check_name, requirement",
    [("api/utf8-boundary", "API-UTF-1"), ("api/budget-holds", "API-BUDGET-2")],
)
@pytest.mark.req("API-UTF-1")
def test_a_wait_past_the_character_fails_with_merged_logprobs(monkeypatch, check_name, requirement):
    """A wait past the character's end fails, whichever form the bytes come in."""
    outcome = judge(
        monkeypatch, check_name, "waits-for-a-complete-piece", merged=True, utf8_boundary="complete-character"
    )
    assert outcome.requirements[requirement].status == FAIL, outcome.message
    assert "the bytes so far end on a character" in outcome.requirements[requirement].evidence


@pytest.mark.req("API-UTF-1")
def test_a_wait_undeclared_fails_with_merged_logprobs(monkeypatch):
    outcome = judge(monkeypatch, "api/utf8-boundary", "waits-for-the-character", merged=True)
    assert outcome.requirements["API-UTF-1"].fingerprint == "API-UTF-1/waited-for-the-character"


@pytest.mark.req("API-BUDGET-3", "RUN-FINDING-1")
def test_budget_binds_allows_only_a_declared_wait(monkeypatch):
    """The thinking tokens a declared wait adds count against the budget only when the profile declares none: then
    the bounded request leaves a forced position free, which breaks the budget itself (API-BUDGET-2, which
    API-BUDGET-3 builds on), and API-BUDGET-3 reads BLOCKED naming it."""
    undeclared = judge(monkeypatch, "api/budget-binds", "waits-for-the-character", merged=True)
    assert undeclared.requirements["API-BUDGET-3"].status == BLOCKED
    assert undeclared.requirements["API-BUDGET-2"].fingerprint == "API-BUDGET-2/forced-position-not-honoured"


@pytest.mark.req("RUN-FINDING-1", "API-UTF-1", "API-GRAMMAR-1", "API-TRUNC-1", "API-BUDGET-3")
@pytest.mark.parametrize(
    "check_name, own",
    [
        ("api/utf8-boundary", "API-UTF-1"),
        ("api/budget-with-structured-output", "API-GRAMMAR-1"),
        ("api/truncated-end-marker", "API-TRUNC-1"),
        ("api/budget-binds", "API-BUDGET-3"),
    ],
)
def test_a_budget_failure_without_the_checks_feature_is_the_budgets(monkeypatch, check_name, own):
    """A forced position left free where no character is incomplete, which the same request without the check's
    feature (a constraint, a cut, a wait) leaves free too, sent alone: the minimal case is a plain budget failure,
    API-BUDGET-2's, and the check's own requirement reads BLOCKED naming it (llama.cpp multi's API-UTF-1 had none of
    its failing cases run out of budget inside a character)."""
    declared = {"utf8_boundary": "complete-character"} if check_name == "api/utf8-boundary" else {}
    outcome = judge(monkeypatch, check_name, "overrun-on-a-character", **declared)
    assert outcome.requirements[own].status == BLOCKED, outcome.requirements[own]
    assert outcome.requirements[own].finding == "API-BUDGET-2"
    owner = outcome.requirements["API-BUDGET-2"]
    assert owner.status == FAIL and owner.fingerprint == "API-BUDGET-2/forced-position-not-honoured", owner
    assert "sent alone 3 times" in owner.evidence
    # its reproduction: the minimal case's requests, without the constraint and uncut
    requests = owner.reproduction["requests"]
    assert len(requests) == 3 and all("response_format" not in r["body"] for r in requests)
