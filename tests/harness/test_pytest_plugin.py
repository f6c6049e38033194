"""The pytest plugin (loaded through its pytest11 entry point) turns checks into items."""

import pytest

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
    from harness import checks, runner

    return [check.name for check in runner.select(checks.all_checks(), [pattern])]


BAD_FACTORIES = {
    "missing": ("def other():\n    return None\n", "has no 'make'"),
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
    assert len(errors) == 1 and "'bad_adapter:make' cannot be judged" in errors[0]
    assert says in result.stderr.str()
    assert "failed" not in result.stdout.str()


def test_a_pattern_matching_no_check_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--specconform-engine", "oracle", "--specconform-check", "nosuch*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: specconform: --specconform-check nosuch[*] matches no check*"])


@pytest.mark.parametrize("named_path", [False, True], ids=["testpaths", "named-path"])
def test_own_tests_are_collected_only_when_named_and_counted_right(pytester, named_path):
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
    total = len(expected) + named_path
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"collected {total} item*"])
    assert ("<Function test_own>" in result.stdout.str()) == named_path
    for name in expected:
        assert f"specconform[{name}]" in result.stdout.str()
