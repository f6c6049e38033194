"""``specconform hunt`` on the CPU: the reference makes its draws without a violation, the zoo's zero-coin mutant is
caught with a reproduction that replays alone, the device's tally agrees with a host check written apart, and the
bound the record states is the binomial one."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy.stats import binom

from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.adapters.zoo.rare import make as make_zero_coin
from specconform.harness.cli import main
from specconform.harness.contract import rejection_preconditions
from specconform.harness.hunt import HuntOptions, hunt, missed_rate, write_record
from specconform.harness.hunt.invariants import INVARIANTS, DeviceTally, request_violations
from specconform.harness.hunt.rows import build_rows
from specconform.harness.hunt.run import request_case
from specconform.harness.vectors import case_from_json
from specconform.specs.interface import RejectionCase

SMALL = dict(draws=10_000, rows=500, vocab=33, seed=7, max_seconds=300.0)


def test_the_bound_is_the_binomial_one():
    """Zero violations in N draws: a per-draw rate at the bound leaves all N clean with probability exactly 5 %, and
    the bound lies just under -ln(0.05)/N; with violations it is the Clopper-Pearson upper limit."""
    for n in (1, 10, 10_000, 10**9):
        bound = missed_rate(n)
        assert math.isclose(math.exp(n * math.log1p(-bound)), 0.05, rel_tol=1e-9)
        assert bound < -math.log(0.05) / n
    assert math.isclose(float(binom.cdf(3, 1000, missed_rate(1000, 3))), 0.05, rel_tol=1e-6)
    assert missed_rate(0) == 1.0


def test_rows_are_a_valid_batch_holding_every_adversarial_kind():
    """The batch passes the oracle's validation, and holds what the hunt is for: drafts the target or q gives no
    mass, a p = 0 draft at the last id, forced tokens the target masks, bonus rows whose support is the last id."""
    rows = build_rows(440, 17, 3, "cpu")
    case = RejectionCase(
        rows.target_logits.double().numpy(),
        rows.draft_token_ids.numpy(),
        rows.num_draft_tokens.numpy(),
        rows.temperature.double().numpy(),
        rows.draft_probs.double().numpy(),
        rows.forced_token_ids.numpy(),
        seeds=np.arange(rows.batch_size),
        positions=rows.positions.numpy(),
    )
    case.validate()
    assert rows.num_rows >= 440
    logits, drafts, forced = case.target_logits, case.draft_token_ids, case.forced_token_ids
    k = case.num_draft_tokens
    draft_rows = np.concatenate([case.row_offsets()[i] + np.arange(k[i]) for i in range(len(k))])
    bonus_rows = case.row_offsets()[1:] - 1
    free = forced[draft_rows] == -1
    p_zero = np.isneginf(logits[draft_rows, drafts]) & free
    assert p_zero.sum() > 0 and (p_zero & (drafts == 16)).sum() > 0
    assert ((case.draft_probs[np.arange(len(drafts)), drafts] == 0) & free).sum() > 0
    masked_forced = forced >= 0
    assert np.isneginf(logits[masked_forced, forced[masked_forced]]).sum() > 0
    last_only = np.isfinite(logits[bonus_rows]).sum(axis=1) == 1
    assert (last_only & np.isfinite(logits[bonus_rows, 16])).sum() > 0
    assert set(k.tolist()) == {0, 1, 2}


def test_the_reference_makes_its_draws_without_a_violation(tmp_path):
    record = hunt(HuntOptions("reference", **SMALL), None)
    assert record.draws >= SMALL["draws"] and not record.violated and not record.violations
    assert all(inv.opportunities > 0 for inv in record.invariants)
    assert record.bound == missed_rate(record.draws)
    json_path, markdown_path = write_record(record, tmp_path)
    assert json.loads(json_path.read_text())["draws"] == record.draws
    assert f"{record.draws:,} draws" in markdown_path.read_text()


def test_the_zero_coin_mutant_is_caught_with_a_reproduction_that_replays_alone():
    """A p = 0 draft accepted on a small coin: the hunt counts it under both invariants it breaks, and the request
    it writes replays alone through the mutant to the same tokens, while the oracle's draws on that case break
    nothing."""
    record = hunt(HuntOptions("specconform.harness.adapters.zoo.rare:make", **SMALL), None)
    violated = {inv.name for inv in record.invariants if inv.violations}
    assert violated == {"p-zero-draft-rejected", "emitted-in-support"}
    mutant, oracle = make_zero_coin(), OracleEngine()
    for violation in record.violations:
        assert violation.reproduced and violation.replayed_alone and violation.seed is not None
        case = case_from_json(violation.case)
        one_hot = case.draft_probs is None
        tokens, num = mutant.rejection_sample(case)
        assert tokens[0][: num[0]].tolist() == violation.token_ids[: violation.num_emitted]
        assert violation.invariant in request_violations(case, tokens[0], int(num[0]), one_hot)
        tokens, num = oracle.rejection_sample(case)
        assert request_violations(case, tokens[0], int(num[0]), one_hot) == []


@pytest.mark.parametrize("q_zero_outside", [False, True])
def test_the_device_tally_agrees_with_the_host_check(q_zero_outside):
    """An output that accepts every draft, emits each forced id and ends with V: the device counts every invariant's
    violations as the per-request host check finds them. Where the engine's contract excludes drafts with
    q(d) = 0, the requests that the contract's own classifier flags are left out, draws and all."""
    rows = build_rows(220, 9, 5, "cpu")
    width = rows.max_drafts + 1
    tokens = torch.full((rows.batch_size, width), -1, dtype=torch.int64)
    num = rows.num_draft_tokens + 1
    offsets = torch.cumsum(rows.num_draft_tokens, 0) - rows.num_draft_tokens
    for i in range(rows.batch_size):
        k = int(rows.num_draft_tokens[i])
        tokens[i, :k] = rows.draft_token_ids[int(offsets[i]) : int(offsets[i]) + k]
        tokens[i, k] = rows.vocab_size
    forced = rows.forced_token_ids >= 0
    tokens[rows.row_request[forced], rows.row_local[forced]] = rows.forced_token_ids[forced]
    num[0] = 0  # one malformed count
    tally = DeviceTally(rows, q_zero_outside=q_zero_outside)
    tally.observe(tokens, num, launch=0, one_hot=False)
    read = tally.read()
    device = {name: result["violations"] for name, result in read["invariants"].items()}
    host, draws = dict.fromkeys(device, 0), 0
    for i in range(rows.batch_size):
        case = request_case(rows, i, None, one_hot=False)
        if q_zero_outside and rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs):
            continue
        draws += int(num[i]) if 1 <= int(num[i]) <= int(rows.num_draft_tokens[i]) + 1 else 0
        for name in request_violations(case, tokens[i].numpy(), int(num[i]), one_hot=False):
            host[name] += 1
    assert device == host and read["draws"] == draws
    q_zero_judged = read["invariants"]["q-zero-draft-rejected"]["opportunities"]
    assert (q_zero_judged == 0) == q_zero_outside
    assert all(
        device[inv.name] > 0 for inv in INVARIANTS if inv.name not in ("forced-emitted", "q-zero-draft-rejected")
    )


COMMAND = ["hunt", "--engine", "reference", "--rows", "10", "--vocab", "9"]


@pytest.mark.parametrize("draws", ["0", "1.5", "many"])
def test_a_draw_count_that_is_not_a_positive_whole_number_is_refused(tmp_path, capsys, draws):
    with pytest.raises(SystemExit) as exit_info:
        main([*COMMAND, "--draws", draws, "--report-dir", str(tmp_path)])
    assert exit_info.value.code == 2 and "--draws" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [(["--devices", "gpu0"], "--devices 'gpu0'"), (["--engine", "oracle"], "names no device for its tensors")],
)
def test_a_device_or_engine_the_hunt_cannot_use_is_named(tmp_path, capsys, arguments, message):
    assert main([*COMMAND, "--draws", "10", "--report-dir", str(tmp_path), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_each_gpu_gets_an_engine_process_that_names_what_it_cannot_do(tmp_path, capsys):
    """``--devices 0`` spawns an engine process that sees GPU 0 alone; an engine that runs on the CPU there is a usage
    error the parent reports with the GPU's index, not a traceback."""
    assert main([*COMMAND, "--draws", "10", "--devices", "0", "--report-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "GPU 0: engine 'reference' runs on cpu" in err and "Traceback" not in err
