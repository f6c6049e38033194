"""A user's mistake is never the engine's failure (issue 39, item 6): each mistake of the issue's table, made as a new
user would make it, is one usage error (exit 2) before any check runs, naming the file, the line and the key or
value, and saying what would be right; no report folder is written, and no engine is named as failing."""

from dataclasses import replace

import pytest

from specconform.harness import cli
from specconform.harness.profiles import canonical

pytest_plugins = ["pytester"]


def invoke(argv, capsys) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def assert_usage_error(status, out, err, *says):
    """Exit 2 with one line on stderr that says each of ``says``; nothing on stdout, no traceback, and no engine
    result (a check's status) anywhere."""
    assert status == 2, (status, out, err)
    assert out == "" and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for word in says:
        assert word in err, (word, err)
    for status_word in ("FAIL", "ERROR", "TIMEOUT"):
        assert status_word not in err, err


def run_with_profile(tmp_path, capsys, text: str):
    """``specconform run --profile FILE`` on the oracle, FILE holding ``text``; the run's outcome and FILE."""
    path = tmp_path / "my-engine.yaml"
    path.write_text(text)
    reports = tmp_path / "runs"
    argv = ["run", "--engine", "oracle", "--profile", str(path), "--check", "rejection/greedy"]
    outcome = invoke([*argv, "--report-dir", str(reports), "--quiet"], capsys)
    assert not reports.exists()  # no report folder
    return outcome, path


def test_a_misspelt_class_in_drop_classes_names_its_line_and_the_class_meant(tmp_path, capsys):
    (status, out, err), path = run_with_profile(
        tmp_path, capsys, "name: e\ndrop_classes:\n  - rs.greedy\n  - rs.seedd\n"
    )
    assert_usage_error(status, out, err, f"{path}:4", "drop_classes", "'rs.seedd'", "did you mean 'rs.seeded'?")


def test_a_misspelt_scope_names_its_line_and_the_scopes(tmp_path, capsys):
    (status, out, err), path = run_with_profile(tmp_path, capsys, "name: e\nscope: sectoin\n")
    assert_usage_error(status, out, err, f"{path}:2", "scope", "'sectoin'", "did you mean 'section'?", "request")


@pytest.mark.parametrize(
    "key, value, line, meant",
    [
        ("layout", "paded", 3, "padded"),
        ("forced_end", "phrse", 3, "phrase"),
        ("capabilities", "[budget, rejecton]", 3, "rejection"),
        ("base", "canonicl", 3, "canonical"),
    ],
)
def test_every_enum_value_of_a_profile_is_checked(tmp_path, capsys, key, value, line, meant):
    (status, out, err), path = run_with_profile(tmp_path, capsys, f"name: e\n# a comment\n{key}: {value}\n")
    assert_usage_error(status, out, err, f"{path}:{line}", key, f"did you mean {meant!r}?")


def test_an_unknown_key_names_its_line(tmp_path, capsys):
    (status, out, err), path = run_with_profile(tmp_path, capsys, "name: e\n\nscopes: section\n")
    assert_usage_error(status, out, err, f"{path}:3", "unknown key 'scopes'", "'scope'")


@pytest.mark.parametrize(
    "text, line_column",
    [
        ("name: e\n  scope: section\n", "2:8"),  # a key indented under a scalar
        ("name: e\ndrop_classes:\n  - rs.seeded\n scope: section\n", "4:2"),  # a key indented one space
    ],
)
def test_a_bad_indent_names_the_file_line_and_column(tmp_path, capsys, text, line_column):
    (status, out, err), path = run_with_profile(tmp_path, capsys, text)
    assert_usage_error(status, out, err, f"{path}:{line_column}:", "not valid YAML")


def test_a_profile_that_is_not_a_mapping_is_named(tmp_path, capsys):
    (status, out, err), path = run_with_profile(tmp_path, capsys, "- rs.seeded\n")
    assert_usage_error(status, out, err, f"{path}:1", "mapping")


def test_the_published_product_profiles_still_load():
    """The check of every value refuses nothing the products declare."""
    from specconform.harness import products
    from specconform.harness.profiles import load_profile

    paths = [p.profile_path for p in products.products().values() if p.profile_path]
    assert paths
    for path in paths:
        load_profile(str(path))


class CountingOnly:
    """An adapter that offers accepted-token counting alone, and says so in its own profile."""

    name, version, device = "counting-only", "1", "cpu"
    profile = replace(canonical(), name="counting-only", capabilities=frozenset({"counting"}))

    def count_emitted(self, token_ids, vocab_size):
        from specconform.harness.adapters.oracle import OracleEngine

        return OracleEngine().count_emitted(token_ids, vocab_size)


def make_counting_only():
    return CountingOnly()


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_profile_claiming_a_capability_the_adapter_lacks_is_refused_before_any_check(tmp_path, capsys, command):
    """The profile claims budget, rejection and counting; the adapter implements counting alone: the rejection checks
    would each read ERROR, as if the engine failed."""
    path = tmp_path / "claims-too-much.yaml"
    path.write_text("name: too-much\n\ncapabilities: [budget, rejection, counting]\n")
    reports = tmp_path / "runs"
    argv = [command, "--engine", "tests.harness.test_users_mistakes:make_counting_only", "--profile", str(path)]
    argv += ["--check", "rejection/greedy"] + (["--report-dir", str(reports), "--quiet"] if command == "run" else [])
    status, out, err = invoke(argv, capsys)
    assert_usage_error(status, out, err, f"{path}:3: capabilities", "budget, rejection", "implements: counting")
    assert "leave budget, rejection out" in err
    assert not reports.exists()


def test_the_adapters_own_capabilities_are_not_refused(tmp_path, capsys):
    path = tmp_path / "counting.yaml"
    path.write_text("name: counting\ncapabilities: [counting]\n")
    argv = ["doctor", "--engine", "tests.harness.test_users_mistakes:make_counting_only", "--profile", str(path)]
    status, out, err = invoke([*argv, "--check", "ac.count"], capsys)
    assert status == 0, err
    assert "profile counting" in out


@pytest.fixture(scope="module")
def vllm_shaped_server():
    """The embedded engine's server answering as vLLM 0.33 does: the reasoning in ``message.reasoning`` alone."""
    pytest.importorskip("transformers")
    from specconform.embedded import start

    server = start(variants=("single",), reasoning_fields=("reasoning",))
    yield server.base_url
    server.stop()


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_an_api_profile_of_another_server_is_named_with_the_one_meant(vllm_shaped_server, tmp_path, capsys, command):
    """``--api-profile sglang`` reads ``message.reasoning_content``, which a vLLM-shaped server never fills: every
    check reading the reasoning would FAIL the server."""
    reports = tmp_path / "runs"
    argv = [command, "--engine", "openai", "--base-url", vllm_shaped_server, "--model", "tiny-think-single"]
    argv += ["--api-profile", "sglang", "--check", "api/*"]
    argv += ["--report-dir", str(reports), "--quiet"] if command == "run" else []
    status, out, err = invoke(argv, capsys)
    assert_usage_error(
        status, out, err, "--api-profile sglang", "message.reasoning_content", "did you mean --api-profile vllm?"
    )
    assert not reports.exists()


def test_an_api_profile_file_of_ones_own_is_taken(vllm_shaped_server, tmp_path, capsys):
    path = tmp_path / "my-api.yaml"
    path.write_text(
        "name: my-server\nbudget_field: thinking_token_budget\nreasoning_field: reasoning\nscope: section\n"
    )
    argv = ["doctor", "--engine", "openai", "--base-url", vllm_shaped_server, "--model", "tiny-think-single"]
    status, out, err = invoke([*argv, "--api-profile", str(path), "--check", "api/*"], capsys)
    assert status == 0, err
    assert "(my-server:tiny-think-single@" in out and "profile my-server" in out
    assert "in API profile my-server's shape holds its fields" in out


def test_an_api_profile_file_of_another_servers_shape_is_named(vllm_shaped_server, tmp_path, capsys):
    path = tmp_path / "my-api.yaml"
    path.write_text("budget_field: custom_params.thinking_budget\nreasoning_field: reasoning_content\n")
    argv = ["doctor", "--engine", "openai", "--base-url", vllm_shaped_server, "--model", "tiny-think-single"]
    status, out, err = invoke([*argv, "--api-profile", str(path)], capsys)
    assert_usage_error(status, out, err, f"--api-profile {path}", "did you mean --api-profile vllm?")


@pytest.mark.parametrize(
    "text, says",
    [
        ("reasoning_field: reasoning\ntoken_ids: return_token_id\n", [":2", "token_ids", "'return_token_ids'"]),
        ("reasoning_field: reasoning\nbudget_feild: x\n", [":2", "unknown key 'budget_feild'", "budget_field"]),
        ("reasoning_field: reasoning\nmodel: tiny\n", [":2", "model", "--model"]),
        ("reasoning_field: [reasoning\n", [":2:1", "not valid YAML"]),
    ],
    ids=["value", "key", "an option's key", "syntax"],
)
def test_a_mistake_in_an_api_profile_file_names_its_line(tmp_path, capsys, text, says):
    path = tmp_path / "my-api.yaml"
    path.write_text(text)
    reports = tmp_path / "runs"
    argv = ["run", "--engine", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    status, out, err = invoke([*argv, "--api-profile", str(path), "--report-dir", str(reports)], capsys)
    assert_usage_error(status, out, err, "--api-profile", str(path), *says)
    assert not reports.exists()


# --- under the pytest plugin: pytest's usage error (exit status 4), naming the plugin's own options


def collected(result) -> set[str]:
    """The check names of the items ``pytest --co -q`` listed."""
    return {line[len("specconform[") : -1] for line in result.stdout.lines if line.startswith("specconform[")}


def declaring(requirement: str) -> set[str]:
    """The checks whose declaration names ``requirement`` (the catalogue, as ``specconform list checks`` shows it)."""
    from specconform.harness import checks

    return {check.name for check in checks.all_checks() if requirement in check.requirements}


@pytest.mark.parametrize(
    "selection",
    [["-m", "AC-COUNT-2"], ["-m", "requirement(id='AC-COUNT-2')"], ["-k", "AC-COUNT-2"]],
    ids=["-m id", "-m requirement(id=)", "-k id"],
)
def test_a_requirement_id_selects_its_checks_under_the_plugin(pytester, selection):
    expected = declaring("AC-COUNT-2")
    assert expected
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", *selection, "--co", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert collected(result) == expected


@pytest.mark.parametrize("selection", [["-m", "rs.seeded"], ["-m", "conformance_class(name='rs.seeded')"]])
def test_a_class_selects_its_checks_under_the_plugin(pytester, selection):
    from specconform.harness import checks

    expected = {check.name for check in checks.all_checks() if check.cls == "rs.seeded"}
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", *selection, "--co", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert expected and collected(result) == expected


def assert_plugin_usage_error(result, *says):
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.ret, result.stderr.str())
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: specconform")]
    assert len(errors) == 1, result.stderr.str()
    for word in says:
        assert word in errors[0], (word, errors[0])
    assert "Traceback" not in result.stderr.str() and "failed" not in result.stdout.str()


def test_the_plugins_errors_name_its_own_options(pytester):
    result = pytester.runpytest_subprocess("--specconform-engine", "openai", "--specconform-model", "m")
    assert_plugin_usage_error(
        result, "--specconform-engine openai needs --specconform-base-url and --specconform-model"
    )
    assert " --base-url" not in result.stderr.str()


def test_a_misspelt_scope_under_the_plugin_is_a_usage_error(pytester):
    path = pytester.makefile(".yaml", engine="name: e\nscope: sectoin\n")
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", "--specconform-profile", str(path))
    assert_plugin_usage_error(result, f"{path}:2", "scope", "did you mean 'section'?")


COUNTING_ONLY = """
from dataclasses import replace

from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.profiles import canonical


class CountingOnly:
    name, version, device = "counting-only", "1", "cpu"
    profile = replace(canonical(), name="counting-only", capabilities=frozenset({"counting"}))

    def count_emitted(self, token_ids, vocab_size):
        return OracleEngine().count_emitted(token_ids, vocab_size)


def make():
    return CountingOnly()
"""


def test_a_profile_claiming_too_much_under_the_plugin_runs_no_check(pytester):
    pytester.makepyfile(counting_only=COUNTING_ONLY)
    pytester.syspathinsert()
    path = pytester.makefile(".yaml", claims="name: claims\ncapabilities: [rejection, counting]\n")
    argv = ["--specconform-engine", "counting_only:make", "--specconform-profile", str(path)]
    result = pytester.runpytest_subprocess(*argv, "--specconform-check", "rejection/*")
    assert_plugin_usage_error(result, f"{path}:2: capabilities", "rejection", "--specconform-profile")


# --- an engine module whose factories are bound at import time, which reading its source cannot see

BOUND_AT_IMPORT = {
    "in-a-loop": "for _name in ('make_oracle', 'make_other'):\n    globals()[_name] = OracleEngine\n",
    "through-globals": "globals().update(make_oracle=OracleEngine)\n",
    "by-a-decorator": (
        "def factory(name):\n"
        "    def bind(function):\n"
        "        globals()[name] = function\n"
        "        return function\n"
        "    return bind\n\n\n"
        "@factory('make_oracle')\n"
        "def _build():\n"
        "    return OracleEngine()\n"
    ),
}


@pytest.fixture
def bound_at_import(tmp_path, monkeypatch, request):
    """A module ``bound_<style>`` on the path whose ``make_oracle`` is bound at import time, in ``style``."""
    style = request.param
    name = "bound_" + style.replace("-", "_")
    source = "from specconform.harness.adapters.oracle import OracleEngine\n\n" + BOUND_AT_IMPORT[style]
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("bound_at_import", list(BOUND_AT_IMPORT), indirect=True)
def test_a_factory_bound_at_import_time_is_found(bound_at_import, capsys):
    argv = ["doctor", "--engine", f"{bound_at_import}:make_oracle", "--check", "rejection/greedy"]
    status, out, err = invoke(argv, capsys)
    assert status == 0, err
    assert f"module {bound_at_import!r} provides 'make_oracle' once imported" in out
    assert "judged              rejection/greedy" in out


@pytest.mark.parametrize("bound_at_import", ["in-a-loop"], indirect=True)
def test_a_factory_missing_once_imported_is_named_with_what_there_is(bound_at_import, tmp_path, capsys):
    reports = tmp_path / "runs"
    argv = ["run", "--engine", f"{bound_at_import}:make_orcle", "--report-dir", str(reports), "--quiet"]
    status, out, err = invoke(argv, capsys)
    assert_usage_error(status, out, err, "defines no 'make_orcle'", "make_oracle, make_other")
    assert not reports.exists()


def test_a_bad_indent_in_an_expectations_file_names_the_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "known.yaml"
    path.write_text("expectations:\n  - check: budget/multitoken\n   status: FAIL\n")
    reports = tmp_path / "runs"
    argv = ["run", "--engine", "oracle", "--expectations", str(path), "--report-dir", str(reports)]
    assert_usage_error(*invoke(argv, capsys), f"{path}:3:", "not valid YAML")
    assert not reports.exists()
