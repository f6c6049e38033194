"""The draw candidates of scripts/profile-draws.py: each kernel (scripts/draw_candidates.py) samples the token its
NumPy definition (scripts/draw_definitions.py, built on the oracle's schemes) gives, on rows without near-ties.

Under Triton's interpreter on a CPU, where the kernels' hardware approximations are numpy's functions; on a GPU
scripts/profile-draws.py holds the compiled kernels to the definitions itself and reports each disagreement (the
hardware log2 of ``philox4`` and ``lean-hash`` is not accurate near 1, so there a winner may part from its
definition). The rows are ragged (the vocabulary is no multiple of a block or of Philox's four words) and split
across several programs, seeds and positions use their high words, and one row has excluded (-inf) ids.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from specconform.impl.kernels import HAS_TRITON

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
NEAR_TIE = 1e-4  # leads below this (relative) may go either way in float32
SEEDS = (0, 1, 2**62 + 12345, -(2**63), 2**31 - 1, 7)
POSITIONS = (0, 5, 2**40 + 3, 2**33 - 1, 2**63 - 1, 99)


def _load(name: str):
    return _load_path(name, SCRIPTS / f"{name}.py")


def _load_path(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scripts():
    if not HAS_TRITON:
        pytest.skip("the draw candidates are Triton kernels")
    yield _load("draw_candidates"), _load("draw_definitions")
    for name in ("draw_candidates", "draw_definitions"):
        del sys.modules[name]


def _rows(dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(38)
    logits = torch.randn(len(SEEDS), 2_083, generator=gen) * 2
    logits[1, ::3] = float("-inf")
    return logits.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", ["reference-0.2", "vllm-mrv2", "philox4", "cross-multiply", "lean-hash", "no-noise"])
def test_each_candidate_samples_its_definitions_token(scripts, name, dtype):
    if torch.cuda.is_available():
        pytest.skip("on a GPU scripts/profile-draws.py checks the compiled kernels")
    candidates, definitions = scripts
    logits = _rows(dtype)
    seeds = torch.tensor(SEEDS, dtype=torch.int64)
    positions = torch.tensor(POSITIONS, dtype=torch.int64)
    launch = candidates.Launch(split=1024, block=1024, warps=4)
    got = candidates.race(name, logits, seeds, positions, launch).tolist()

    rows = logits.double().numpy()
    judged = 0
    for row, (seed, position) in enumerate(zip(SEEDS, POSITIONS)):
        want, lead = definitions.winner(name, rows[row], seed, position)
        if lead > NEAR_TIE:
            assert got[row] == want, f"{name} row {row}: kernel {got[row]}, definition {want} (lead {lead:.2e})"
            judged += 1
    assert judged >= len(SEEDS) - 1, f"{name}: only {judged} rows without a near-tie"


def test_the_candidates_draw_differently(scripts):
    """The definitions are distinct schemes: on a row of equal logits each picks its own noise's winner, and no two
    agree on every row (a candidate that silently fell back to another's noise would)."""
    _, definitions = scripts
    flat = np.zeros(2_083)
    picks = {
        name: tuple(definitions.winner(name, flat, seed, position)[0] for seed, position in zip(SEEDS, POSITIONS))
        for name in ("reference-0.2", "vllm-mrv2", "philox4", "lean-hash")
    }
    assert len(set(picks.values())) == len(picks), picks


def test_an_unknown_candidate_or_a_bad_launch_is_named(scripts):
    candidates, _ = scripts
    with pytest.raises(ValueError, match="'gumbel'"):
        candidates.candidate("gumbel")
    rows = torch.zeros(1, 8)
    one = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(ValueError, match="launch.block of philox4 must be a multiple of 1024; got 256"):
        candidates.race_launcher("philox4", rows, one, one, candidates.Launch(split=1024, block=256, warps=4))
    with pytest.raises(ValueError, match="launch.split must be a multiple of launch.block"):
        candidates.race_launcher("no-noise", rows, one, one, candidates.Launch(split=1000, block=256, warps=4))


def test_the_script_checks_and_tables_every_candidate(scripts, monkeypatch, capsys):
    """scripts/profile-draws.py end to end on a CPU (the interpreter, a timer that launches once): every candidate is
    checked against its definition, and each table line's ratio is its median over the floor's median."""
    if torch.cuda.is_available():
        pytest.skip("on a GPU the script itself is the measurement")
    from specconform.harness.bench import timing

    calls = []

    def launch_once(fn, graph):
        assert graph, "the script times graph replays"
        fn()
        calls.append(fn)
        return 0.001 * (1 + len(calls) % 7)  # repeats that differ, so that medians and spreads are computed

    monkeypatch.setattr(timing, "DEVICE", "cpu")
    monkeypatch.setattr(timing, "do_bench", launch_once)
    monkeypatch.setattr(timing, "REPEATS", 2)
    candidates, _ = scripts
    profile = _load_path("profile_draws", SCRIPTS / "profile-draws.py")
    monkeypatch.setattr(profile, "CANDIDATE_LAUNCHES", (candidates.Launch(split=1024, block=1024, warps=4),))
    try:
        status = profile.main(["--rows", "3", "--vocabs", "1500", "--dtypes", "bf16"])
    finally:
        del sys.modules["profile_draws"]
    out = capsys.readouterr().out
    assert status == 0, out
    names = list(candidates.CANDIDATES)
    for name in names:
        assert f"check {name:15s} bf16 V=1500: " in out, out
    agreed = [line.split(": ")[1].split(" ")[0] for line in out.splitlines() if line.strip().startswith("check ")]
    assert len(agreed) == len(names)
    for counts in agreed:
        agree, judged = map(int, counts.split("/"))
        assert agree == judged >= profile.CHECK_ROWS - 1, out
    table = {line.split()[0]: line.split() for line in out.splitlines() if " bfloat16 " in line}
    floor = float(table["read-once"][5])
    assert set(table) == {"read-once", *names}, out
    for name in names:
        median, ratio = float(table[name][4]), float(table[name][6])
        assert ratio == pytest.approx(median / floor, abs=0.01), table[name]
