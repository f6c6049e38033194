"""A user's mistake is never the engine's failure (issue 39, item 6): each mistake of the issue's table, made as a new
user would make it, is one usage error (exit 2) before any check runs, naming the file, the line and the key or
value, and saying what would be right; no report folder is written, and no engine is named as failing."""

from dataclasses import replace

import pytest

from specconform.harness import cli
from specconform.harness.profiles import canonical


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
