"""The pytest plugin (loaded through its pytest11 entry point) turns checks into items."""

import http.server
import json
import socket
import threading

import pytest

from specconform.harness.config import select

pytest_plugins = ["pytester"]


def test_plugin_runs_checks_as_items(pytester):
    own = pytester.makepyfile("def test_own(): pass")
    result = pytester.runpytest_subprocess(
        own,
        "--specconform-engine",
        "zoo:end-marker-restarted",
        "--specconform-check",
        "tb.multitoken",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3, failed=6)  # test_own, then the tb.multitoken checks (budget/marker-borders too)
    result.stdout.fnmatch_lines(["*FAIL budget/multitoken [[]TB-FORCE-2[]]*"])
    result.stdout.fnmatch_lines(["reproduce: pytest --specconform-engine zoo:end-marker-restarted *"])


def test_plugin_honours_expectations(pytester):
    known = pytester.makefile(
        ".yaml", known="expectations:\n  - {check: budget/multitoken, status: FAIL, reason: tracked upstream}\n"
    )
    result = pytester.runpytest_subprocess(
        "--specconform-engine",
        "zoo:end-marker-restarted",
        "--specconform-check",
        "budget/multitoken",
        "--specconform-expectations",
        str(known),
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(xfailed=1)


def _selected(pattern: str) -> list[str]:
    from specconform.harness import checks

    return [check.name for check in select(checks.all_checks(), [pattern])]


BAD_FACTORIES = {
    "missing": ("def other():\n    return None\n", "defines no 'make'; its functions and classes: other"),
    "raising": ("def make():\n    raise AttributeError('no such engine attribute')\n", "AttributeError"),
}


@pytest.mark.parametrize("source, says", list(BAD_FACTORIES.values()), ids=list(BAD_FACTORIES))
def test_a_bad_factory_is_one_usage_error(pytester, source, says):
    pytester.makepyfile(bad_adapter=source)
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess(
        "--specconform-engine", "bad_adapter:make", "--specconform-check", "tb.multitoken", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: specconform")]
    assert len(errors) == 1 and "'bad_adapter:make'" in errors[0]
    assert says in result.stderr.str()
    assert "failed" not in result.stdout.str()


def test_a_pattern_matching_no_check_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", "--specconform-check", "nosuch*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: specconform: --specconform-check nosuch[*] matches no check*"])


@pytest.mark.parametrize("named_path", [False, True], ids=["testpaths", "named-path"])
def test_own_tests_are_still_collected_beside_the_checks_and_counted_right(pytester, named_path):
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_own.py").write_text("def test_own(): pass\n")
    expected = _selected("tb.multitoken")
    args = ["tests"] if named_path else []
    result = pytester.runpytest_subprocess(
        *args,
        "--specconform-engine",
        "oracle",
        "--specconform-check",
        "tb.multitoken",
        "--co",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"collected {len(expected) + 1} item*"])
    assert "<Function test_own>" in result.stdout.str()
    for name in expected:
        assert f"specconform[{name}]" in result.stdout.str()


def test_the_config_file_sets_the_options_and_the_command_line_wins(pytester):
    pytester.makepyprojecttoml('[tool.specconform]\ncheck = ["tb.multitoken"]\nquiet = true\nseed = 5\n')
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", "--co", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"collected {len(_selected('tb.multitoken'))} item*"])
    result = pytester.runpytest_subprocess(
        "--specconform-engine", "oracle", "--specconform-check", "rejection/greedy", "--co", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["collected 1 item*"])


def test_an_unknown_config_key_is_one_usage_error_naming_it(pytester):
    pytester.makepyprojecttoml("[tool.specconform]\nsed = 5\n")
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: specconform: *pyproject.toml [[]tool.specconform[]]: unknown key 'sed'*"])


def test_a_shard_of_the_checks_is_collected(pytester):
    every = _selected("api/*")
    collected = []
    for shard in ("1/2", "2/2"):
        result = pytester.runpytest_subprocess(
            "--specconform-engine", "oracle", "--specconform-check", "api/*", "--specconform-shard", shard, "--co"
        )
        collected += [line.split("[", 1)[1].rstrip("]>") for line in result.stdout.lines if "specconform[" in line]
    assert sorted(collected) == sorted(every)


class StubServer(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that lists one model and answers nothing else; it notes what it was asked, and
    each request's Authorization and X-Team headers."""

    asked: list[str] = []
    credentials: list[tuple[str | None, str | None]] = []

    def do_GET(self):
        self.asked.append(f"GET {self.path}")
        self.credentials.append((self.headers.get("Authorization"), self.headers.get("X-Team")))
        body = json.dumps({"object": "list", "data": [{"id": "team-model", "object": "model"}]}).encode()
        if self.path != "/v1/models":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        self.asked.append(f"POST {self.path} {self.rfile.read(length).decode()}")
        self.credentials.append((self.headers.get("Authorization"), self.headers.get("X-Team")))
        self.send_error(404)

    def log_message(self, *args):
        pass


def test_the_plugin_judges_a_server_named_by_base_url_and_model(pytester):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    StubServer.credentials.clear()
    try:
        result = pytester.runpytest_subprocess(
            *("--specconform-engine", "openai", "--specconform-base-url", base_url),
            *("--specconform-model", "team-model", "--specconform-check", "api/invalid-budget"),
            *("--specconform-api-key", "sk-team-secret", "--specconform-header", "X-Team:blue-team-token"),
            *("--specconform-timeout", "60", "-p", "no:cacheprovider"),
        )
    finally:
        server.shutdown()
    assert "GET /v1/models" in StubServer.asked
    assert any(line.startswith("POST /v1/chat/completions") and "team-model" in line for line in StubServer.asked)
    assert StubServer.credentials and set(StubServer.credentials) == {("Bearer sk-team-secret", "blue-team-token")}
    result.stdout.fnmatch_lines([f"reproduce: pytest --specconform-engine openai --specconform-base-url {base_url} *"])
    # the failure's body and, on CI (pytest does not truncate there), the short summary repeat one line
    (reproduce,) = {line for line in result.outlines if line.startswith("reproduce: ")}
    assert '--specconform-api-key "$OPENAI_API_KEY"' in reproduce and "X-Team:…" in reproduce
    assert "sk-team-secret" not in result.stdout.str() and "blue-team-token" not in result.stdout.str()


def test_a_report_dir_gets_a_run_folder_of_the_checks_that_ran(pytester):
    result = pytester.runpytest_subprocess(
        *("--specconform-engine", "zoo:end-marker-restarted", "--specconform-check", "tb.multitoken"),
        *("--specconform-report-dir", "runs", "-k", "budget/multitoken", "-p", "no:cacheprovider"),
    )
    (run_dir,) = (pytester.path / "runs").iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["check"] for r in records] == ["budget/multitoken"]  # -k deselected the rest: not planned either
    assert records[0]["status"] == "FAIL" and records[0]["reproduce"].startswith("pytest --specconform-engine ")
    assert "INCOMPLETE" not in (run_dir / "summary.md").read_text()
    assert (run_dir / "junit.xml").is_file() and (run_dir / "report.html").is_file()
    result.assert_outcomes(failed=1, deselected=len(_selected("tb.multitoken")) - 1)


def test_an_engine_that_cannot_be_built_writes_no_run_folder(pytester):
    pytester.makepyfile(bad_adapter="def other():\n    return None\n")
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess(
        *("--specconform-engine", "bad_adapter:make", "--specconform-check", "tb.multitoken"),
        *("--specconform-report-dir", "runs", "-p", "no:cacheprovider"),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "runs").exists()


def test_a_server_that_does_not_answer_is_one_usage_error(pytester):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = pytester.runpytest_subprocess(
        "--specconform-engine",
        "openai",
        f"--specconform-base-url=http://127.0.0.1:{port}/v1",
        "--specconform-model",
        "m",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: specconform")]
    assert len(errors) == 1 and "no server answers" in errors[0]
