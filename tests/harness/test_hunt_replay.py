"""``specconform hunt --replay RECORD``: a hunt record's violations replayed alone. The zoo's zero-coin mutant
reproduces its own record; the reference, on the same requests and draws, emits what the oracle emits and breaks
nothing; a record that cannot be replayed is named with what is wrong."""

from __future__ import annotations

import json

import pytest

from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.cli import main
from specconform.harness.hunt import HuntOptions, hunt, write_record
from specconform.harness.vectors import case_from_json

RARE = "specconform.harness.adapters.zoo.rare:make"
SMALL = dict(draws=10_000, rows=500, vocab=33, seed=7, max_seconds=300.0)


@pytest.fixture(scope="module")
def rare_record(tmp_path_factory):
    """The zero-coin mutant's hunt record, holding its first violations (the hunt's own test shows they occur)."""
    record = hunt(HuntOptions(RARE, **SMALL), None)
    assert record.violations
    json_path, _ = write_record(record, tmp_path_factory.mktemp("hunt"))
    return json_path


def test_the_mutant_reproduces_its_own_record(rare_record, capsys):
    assert main(["hunt", "--replay", str(rare_record), "--engine", RARE]) == 1
    lines = capsys.readouterr().out.splitlines()
    violations = json.loads(rare_record.read_text())["violations"]
    assert len(lines) == len(violations)
    for line, violation in zip(lines, violations):
        recorded = violation["token_ids"][: violation["num_emitted"]]
        assert f"recorded {recorded}, " in line and f"emits {recorded}: REPRODUCED" in line


def test_the_reference_replays_the_record_as_the_oracle_draws_it(rare_record, capsys):
    """The reference's draws are the spec's (RS-RNG-1): on each recorded request and seed it emits the oracle's ids,
    which break no invariant."""
    assert main(["hunt", "--replay", str(rare_record), "--engine", "reference"]) == 0
    lines = capsys.readouterr().out.splitlines()
    oracle = OracleEngine()
    for line, violation in zip(lines, json.loads(rare_record.read_text())["violations"], strict=True):
        tokens, num = oracle.rejection_sample(case_from_json(violation["case"]))
        expected = [int(t) for t in tokens[0][: int(num[0])]]
        assert f"emits {expected}: not reproduced (breaks nothing)" in line


def test_a_record_that_cannot_be_replayed_is_named(tmp_path, capsys):
    clean = hunt(HuntOptions("reference", draws=100, rows=10, vocab=9, seed=3, max_seconds=300.0), None)
    clean_path, _ = write_record(clean, tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    launch_drawn = tmp_path / "launch.json"
    no_seed = {"case": {}, "invariant": "emitted-in-support", "token_ids": [], "num_emitted": 0, "seed": None}
    launch_drawn.write_text(json.dumps({"violations": [no_seed]}))
    for path, message in [
        (clean_path, "holds no violations"),
        (broken, "cannot read a hunt record"),
        (launch_drawn, "violations[0] has seed None"),
    ]:
        assert main(["hunt", "--replay", str(path), "--engine", "reference"]) == 2
        err = capsys.readouterr().err
        assert f"--replay {path}" in err and message in err


def test_a_hunt_without_a_report_folder_is_refused(capsys):
    assert main(["hunt", "--engine", "reference", "--draws", "10", "--rows", "10", "--vocab", "9"]) == 2
    assert "--report-dir" in capsys.readouterr().err
