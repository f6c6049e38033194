"""Distribution of one run's checks: shards partition the selection, several engine processes run checks side by
side, a run stops starting checks after --maxfail failures, and --last-failed re-runs only the last failures."""

import functools
import json
import re

import pytest

from specconform.harness import checks, cli, execution, runner
from specconform.harness.config import RunConfig, Shard, select
from specconform.harness.core import Context
from specconform.harness.isolation import EngineProcess
from specconform.harness.schemas import RunRecord

from . import fake_checks


def _listed(capsys, *argv) -> list[str]:
    assert cli.main(["list", "checks", *argv]) == 0
    return [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]


@pytest.mark.parametrize("count", [2, 3])
def test_shards_of_the_list_partition_it_in_catalogue_order(capsys, count):
    every = [check.name for check in checks.all_checks()]
    shards = [_listed(capsys, "--shard", f"{i}/{count}") for i in range(1, count + 1)]
    assert sorted(name for shard in shards for name in shard) == sorted(every)
    assert all(shard == [name for name in every if name in shard] for shard in shards)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_shard_is_taken_of_the_selection():
    api = select(checks.all_checks(), ["api/*"])
    first = RunConfig(checks=("api/*",), shard=Shard(1, 2)).selected(checks.all_checks())
    second = RunConfig(checks=("api/*",), shard=Shard(2, 2)).selected(checks.all_checks())
    assert sorted(c.name for c in first + second) == sorted(c.name for c in api)


def test_an_empty_shard_is_a_usage_error(capsys):
    code = cli.main(["run", "--engine", "oracle", "--check", "rejection/greedy", "--shard", "2/2"])
    assert code == 2 and "--shard 2/2 holds no check: the selection has 1" in capsys.readouterr().err


@pytest.mark.parametrize("shard", ["0/2", "3/2", "x"])
def test_a_bad_shard_is_one_usage_line(shard, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["list", "checks", "--shard", shard])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--shard" in err and repr(shard) in err and len(err.splitlines()) == 1


@pytest.fixture
def fake_engine(monkeypatch):
    """Engine processes of the oracle that run the fake catalogue (tests/harness/fake_checks.py)."""
    monkeypatch.setattr(
        execution, "EngineProcess", functools.partial(EngineProcess, catalogue="tests.harness.fake_checks:checks")
    )


def _run(names, tmp_path, **options):
    by_name = {c.name: c for c in fake_checks.checks()}
    selected = [by_name[name] for name in names]
    records = []
    config = RunConfig(engines=("oracle",), timeout=120, **options)
    never = execution.run_engine(
        "oracle",
        selected,
        config,
        profile=None,
        expectations=[],
        on_record=records.append,
        limit=execution.FailureLimit(config.maxfail),
        run_dir=tmp_path,
    )
    return records, [c.name for c in never]


def test_workers_run_checks_side_by_side_in_their_own_engine_processes(fake_engine, tmp_path, monkeypatch):
    rendezvous = tmp_path / "met"
    rendezvous.mkdir()
    monkeypatch.setenv(fake_checks.RENDEZVOUS, str(rendezvous))
    records, never = _run(["meet", "meet-again"], tmp_path, workers=2)
    assert never == []
    assert sorted(r.check for r in records) == ["meet", "meet-again"]
    assert {r.status for r in records} == {"PASS"}, [r.message for r in records]
    assert len(list(rendezvous.iterdir())) == 2  # two engine processes, each inside a check at once


def test_maxfail_starts_no_check_after_the_limit(fake_engine, tmp_path):
    records, never = _run(["fail", "pass", "crash"], tmp_path, maxfail=1)
    assert [(r.check, r.status) for r in records] == [("fail", "FAIL")]
    assert never == ["pass", "crash"]


def test_an_expected_failure_does_not_count_toward_maxfail():
    limit = execution.FailureLimit(1)
    record = RunRecord.model_validate(_record("fail", "FAIL"))
    limit(record)  # an expected failure: nothing unexpected
    assert not limit.reached
    limit(record.model_copy(update={"unexpected": ["TB-FORCE-1"]}))
    assert limit.reached


def _earlier_run(report_dir, name, records, planned):
    folder = report_dir / name
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "run.json").write_text(json.dumps({"planned": planned}))
    return folder


def _record(check, status, unexpected=()):
    """A whole record of an earlier run (records are typed: specconform.harness.schemas.RunRecord)."""
    return {
        "engine": "oracle",
        "engine_spec": "oracle",
        "check": check,
        "cls": "tb.core",
        "status": status,
        "message": "",
        "results": {},
        "engine_version": "spec-0.2",
        "device": "cpu",
        "profile": "canonical",
        "seed": 1,
        "duration_s": 0.0,
        "reproduce": f"specconform run --engine oracle --check {check}",
        "unexpected": list(unexpected),
        "requirements": [],
    }


def test_last_failed_takes_the_newest_runs_unexpected_failures_and_missing_records(tmp_path):
    planned = [["oracle", n] for n in ("rejection/greedy", "rejection/invalid-ids", "budget/sequential", "api/x")]
    _earlier_run(tmp_path, "20261126-100000", [_record("rejection/greedy", "FAIL", ["RS-1"])], planned)
    newest = _earlier_run(
        tmp_path,
        "20261126-100000-1",
        [
            _record("rejection/greedy", "PASS"),
            _record("rejection/invalid-ids", "ERROR", ["check"]),
            _record("budget/sequential", "FAIL"),  # expected: no unexpected result
        ],
        planned[:3],
    )
    (tmp_path / "not-a-run").mkdir()
    assert execution.last_run(tmp_path) == newest
    config = RunConfig(engines=("oracle", "reference"), last_failed=True, report_dir=str(tmp_path))
    plan, source = execution.plan(config, checks.all_checks())
    assert source == newest
    assert {e: [c.name for c in cs] for e, cs in plan.items()} == {"oracle": ["rejection/invalid-ids"]}


def test_last_failed_without_an_earlier_run_is_a_usage_error(tmp_path, capsys):
    code = cli.main(["run", "--engine", "oracle", "--lf", "--report-dir", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 2 and "--last-failed: no earlier run under --report-dir" in err


def test_last_failed_with_nothing_failed_runs_nothing(tmp_path, capsys):
    _earlier_run(tmp_path, "20261126-100000", [_record("rejection/greedy", "PASS")], [["oracle", "rejection/greedy"]])
    assert cli.main(["run", "--engine", "oracle", "--last-failed", "--report-dir", str(tmp_path)]) == 0
    assert "nothing to re-run" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20261126-100000"]


def test_last_failed_re_runs_only_the_failures(tmp_path, capsys):
    planned = [["oracle", "rejection/greedy"], ["oracle", "rejection/invalid-ids"]]
    _earlier_run(tmp_path, "20261126-100000", [_record("rejection/greedy", "PASS")], planned)
    assert cli.main(["run", "--engine", "oracle", "--lf", "--quiet", "--report-dir", str(tmp_path)]) == 0
    (new,) = [p for p in tmp_path.iterdir() if p.name != "20261126-100000"]
    assert [r.check for r in runner.read_records(new)] == ["rejection/invalid-ids"]


def test_a_context_follows_the_config():
    from specconform.harness.isolation import EngineInfo
    from specconform.harness.profiles import canonical

    info = EngineInfo("e", "1", "cpu", canonical(), statistical_deviation=0.05)
    assert RunConfig(seed=3).context(info) == Context(profile=canonical(), seed=3, deviation=0.05)
    assert RunConfig(deviation=0.2).context(info).deviation == 0.2


def test_a_run_stopped_by_maxfail_says_so_in_its_closing_lines(tmp_path, capsys):
    """An engine team's adapter that ignores the budget (tests/unit/team_adapter.py), stopped at its first failure:
    the closing lines say why checks have no record, and the last line counts as summary.md does."""
    from .test_console import summary_counts

    argv = ["run", "--engine", "tests.unit.team_adapter:make", "--check", "TB-FORCE-*", "-x", "--quiet"]
    assert cli.main([*argv, "--report-dir", str(tmp_path)]) == 1
    closing = capsys.readouterr().out.strip().splitlines()
    (run_dir,) = tmp_path.iterdir()
    records = runner.read_records(run_dir)
    missing = runner.missing_records(run_dir, records)
    assert sum(bool(r.unexpected) for r in records) == 1 and missing
    (stopped,) = [line for line in closing if "(--maxfail)" in line]
    assert stopped.startswith(f"stopped after 1 failing checks (--maxfail): {len(missing)} selected checks have NO")
    assert closing[-1].startswith("FAIL: ") and f"INCOMPLETE: {len(missing)} selected checks" in closing[-1]
    shown = {s: int(n) for s, n in re.findall(r"([A-Z_]+)=(\d+)", closing[-1])}
    assert shown == summary_counts((run_dir / "summary.md").read_text())
