"""``specconform prove`` against a server: the patch is applied inside the server's processes (a child it
spawns included), never in the judging interpreter.

The stand-in server is a toy OpenAI-compatible HTTP server made in ``tmp_path``: the status it answers a
budgeted chat request with comes from a rule module that only a spawned worker process imports, with a
bug at a known line (it accepts every budget: HTTP 200). The reproduction re-runs ``api/invalid-budget``
(API-ERROR-1: an invalid budget must be a 400 naming the field)."""

import json
import socket
import sys
from pathlib import Path

import pytest
import yaml

from specconform.harness import cli, proof_servers, proofs

ROOT = Path(__file__).resolve().parents[2]

RULE = '''"""Which HTTP status a chat request with a thinking budget gets."""


def budget_status(budget):
    return 200  # the bug: every budget is accepted
'''

FIX = """--- a/toyserve/rule.py
+++ b/toyserve/rule.py
@@ -4,2 +4,2 @@
 def budget_status(budget):
-    return 200  # the bug: every budget is accepted
+    return 200 if type(budget) is int and budget >= 0 else 400
"""
WRONG_FIX = FIX.replace("200 if type(budget) is int and budget >= 0 else 400", "201")

APP = '''"""A toy OpenAI-compatible server; a spawned worker judges each budget (as vLLM's engine core runs apart)."""

import json
import multiprocessing
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def status_of(budget):
    from toyserve import rule  # imported in the worker only

    return rule.budget_status(budget)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "toy", "object": "model", "created": 0, "owned_by": "toy"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "thinking_token_budget" in body:
            status = self.server.pool.apply(status_of, (body["thinking_token_budget"],))
            if status != 200:
                return self._send(status, {"error": {"message": f"invalid thinking_token_budget", "code": status}})
        message = {"role": "assistant", "content": ""}
        choice = {"index": 0, "finish_reason": "length", "message": message}
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "toy", "choices": [choice]})


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.pool = multiprocessing.get_context("spawn").Pool(1)
    server.serve_forever()
'''


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository root whose one expectation's proof starts the toy server (``proofs/toy/serve.sh``),
    and the ``prove`` options that name it."""
    peer = tmp_path / "peer"
    (peer / "toyserve").mkdir(parents=True)
    (peer / "toyserve" / "__init__.py").write_text("")
    (peer / "toyserve" / "rule.py").write_text(RULE)
    (peer / "toyserve" / "app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(peer))  # the judging process can apply the diff (it checks that first)
    monkeypatch.setenv("PYTHONPATH", f"{peer}:{ROOT}")
    port = free_port()
    (tmp_path / "proofs" / "toy").mkdir(parents=True)
    (tmp_path / "proofs/toy/serve.sh").write_text(f"exec {sys.executable} -m toyserve.app {port}\n")
    (tmp_path / "proofs/toy/fix.diff").write_text(FIX)
    reproduction = {"format": 1, "kind": "api", "check": "api/invalid-budget", "requirement": "API-ERROR-1"}
    (tmp_path / "proofs/toy/case.json").write_text(json.dumps({**reproduction, "seed": 1, "requests": []}))
    entry = {
        "check": "api/invalid-budget",
        "requirement": "API-ERROR-1",
        "status": "FAIL",
        "fingerprint": "API-ERROR-1/invalid-budget-not-400",
        "reason": "budget_status accepts every budget (toyserve/rule.py line 5)",
        "proof": {
            "patch": "proofs/toy/fix.diff",
            "reproduction": "proofs/toy/case.json",
            "server": "proofs/toy/serve.sh",
        },
    }
    (tmp_path / "expectations").mkdir()
    expectations = tmp_path / "expectations" / "toy.yaml"
    expectations.write_text(yaml.safe_dump({"engine": "toy", "expectations": [entry]}))
    options = ["--engine", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "toy"]
    return tmp_path, expectations, options


def prove(expectations, options, capsys):
    status = cli.main(["prove", str(expectations), *options])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_patch_applied_in_the_servers_worker_proves_the_entry(project, capsys):
    _, expectations, options = project
    status, out, _ = prove(expectations, options, capsys)
    assert (
        out.splitlines()[0]
        == "PROVEN api/invalid-budget API-ERROR-1: unpatched API-ERROR-1/invalid-budget-not-400, patched PASS"
    )
    assert status == 0
    assert "toyserve.rule" not in sys.modules  # the judging process never imported the peer


def test_a_wrong_patch_in_the_server_is_not_proven(project, capsys):
    root, expectations, options = project
    (root / "proofs/toy/fix.diff").write_text(WRONG_FIX)
    status, out, _ = prove(expectations, options, capsys)
    assert status == 1
    still = "patched it still fails: api/invalid-budget API-ERROR-1: API-ERROR-1/invalid-budget-not-400"
    assert out.startswith(f"NOT PROVEN api/invalid-budget API-ERROR-1: {still}")


def test_a_server_proof_needs_the_servers_url(project, capsys):
    _, expectations, _ = project
    status, _, err = prove(expectations, ["--engine", "oracle"], capsys)
    assert status == 2 and "its proof starts a server; name it with --base-url" in err


def test_a_server_that_exits_is_told_with_its_log(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text("echo cannot bind >&2\nexit 3\n")
    with (
        pytest.raises(RuntimeError, match="exited 3:\ncannot bind"),
        proof_servers.served(script, [f"http://127.0.0.1:{free_port()}/v1"]),
    ):
        pass


def test_the_server_key_is_optional_and_checked(project):
    root, expectations, _ = project
    (entry,), _ = proofs.load_proofs(expectations)
    assert entry.server == root / "proofs/toy/serve.sh"
    data = yaml.safe_load(expectations.read_text())
    data["expectations"][0]["proof"]["server"] = "proofs/toy/none.sh"
    expectations.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="proof server 'proofs/toy/none.sh' does not exist"):
        proofs.load_proofs(expectations)


def test_an_error_entry_is_proven_by_an_unpatched_raise_and_a_patched_pass(tmp_path):
    entry = proofs.ProofEntry(0, "api/x", "", (), tmp_path / "p.diff", tmp_path / "r.json", status="ERROR")
    raised = "the engine raised InternalServerError: Error code: 500"
    failed = [{"name": "api/x API-SPEC-4", "fingerprint": "API-SPEC-4/greedy-differs", "evidence": "e"}]
    passed = [{"name": "api/x API-SPEC-4", "fingerprint": "", "evidence": ""}]
    assert proofs.judge(entry, raised, passed) == (True, f"unpatched {raised}, patched PASS")
    assert proofs.judge(entry, raised, failed)[1].startswith("patched it no longer errs but fails: api/x API-SPEC-4")
    assert proofs.judge(entry, passed, passed)[0] is False  # it must err unpatched
    assert proofs.judge(entry, "the replay ran past 1800 s", passed) == (False, "the replay ran past 1800 s")
    failing = proofs.ProofEntry(0, "api/x", "API-SPEC-4", (), tmp_path / "p.diff", tmp_path / "r.json")
    assert proofs.judge(failing, raised, passed) == (False, raised)  # a FAIL entry is not proven by an error
