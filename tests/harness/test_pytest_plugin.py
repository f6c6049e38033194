"""The pytest plugin (loaded through its pytest11 entry point) turns checks into items."""

pytest_plugins = ["pytester"]


def test_plugin_runs_checks_as_items(pytester):
    pytester.makepyfile("def test_own(): pass")
    result = pytester.runpytest_subprocess(
        "--specconform-engine",
        "zoo:end-marker-restarted",
        "--specconform-check",
        "tb.multitoken",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=3, failed=4)  # test_own, then the tb.multitoken checks
    result.stdout.fnmatch_lines(["*FAIL budget/multitoken [[]TB-FORCE-2[]]*"])


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
