"""mypy against its baseline (scripts/lint/mypy_baseline.py): the modules held at zero errors (the core, the
configuration, the statuses, the schemas and every module of the checks) have none on this tree, and the gate fails
on an error there even where the baseline lists it, on a new error, and on a fixed one the baseline still lists."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "lint" / "mypy_baseline.py"


def _script():
    spec = importlib.util.spec_from_file_location("mypy_baseline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gate = _script()
IN_CHECKS = 'specconform/harness/checks/counting.py: Value of type "X | None" is not indexable  [index]'
ELSEWHERE = 'specconform/harness/history.py: Need type annotation for "table"  [var-annotated]'
OTHER = 'specconform/harness/isolation.py: "None" has no attribute "poll"  [attr-defined]'


@pytest.fixture
def found(monkeypatch, tmp_path):
    """The errors a stand-in mypy reports (a list to fill), against a baseline in ``tmp_path``."""
    errors: list[str] = []
    monkeypatch.setattr(gate, "run_mypy", lambda: list(errors))
    monkeypatch.setattr(gate, "BASELINE", tmp_path / "mypy-baseline.txt")
    return errors


def _baseline(*lines: str) -> None:
    gate.BASELINE.write_text("".join(f"{line}\n" for line in lines))


def test_the_core_config_statuses_schemas_and_every_module_of_the_checks_are_held_at_zero():
    named = [ROOT / "harness" / f"{name}.py" for name in ("core", "config", "statuses", "schemas")]
    checks = sorted((ROOT / "harness" / "checks").rglob("*.py"))
    assert len(checks) > 30  # the package, not an empty folder
    for path in [*named, *checks]:
        assert path.exists(), path
        assert f"specconform/{path.relative_to(ROOT).as_posix()}".startswith(gate.STRICT), path
    assert not "specconform/harness/runner.py".startswith(gate.STRICT)  # the rest only against the baseline


def test_an_error_in_a_held_module_fails_even_where_the_baseline_lists_it(found, capsys):
    found.append(IN_CHECKS)
    _baseline(IN_CHECKS)
    assert gate.main([]) == 1
    assert "held at zero errors" in capsys.readouterr().err
    assert gate.main(["--update"]) == 1  # nor can --update write it into the baseline
    assert gate.read_baseline() == [IN_CHECKS]


def test_the_baseline_may_only_shrink(found, capsys):
    found.append(ELSEWHERE)
    _baseline(ELSEWHERE, OTHER)
    assert gate.main([]) == 1  # OTHER was fixed: the baseline must drop it
    assert "still in the baseline" in capsys.readouterr().err
    assert gate.main(["--update"]) == 0 and gate.read_baseline() == [ELSEWHERE]
    assert gate.main([]) == 0
    found.append(OTHER)  # a new error
    assert gate.main([]) == 1
    assert "not in mypy-baseline.txt" in capsys.readouterr().err
    assert gate.main(["--update"]) == 1 and gate.read_baseline() == [ELSEWHERE]


def test_the_held_modules_have_no_mypy_error():
    """mypy itself on this tree (CI runs the script first, so its cache makes this a re-check of what changed)."""
    pytest.importorskip("mypy")
    assert gate.strict_errors(gate.run_mypy()) == []
