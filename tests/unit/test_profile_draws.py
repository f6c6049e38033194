"""The draw candidates of scripts/profile-draws.py: each kernel (scripts/draw_candidates.py) samples the token its
NumPy definition (scripts/draw_definitions.py, built on the oracle's schemes) gives, on rows without near-ties.

Under Triton's interpreter on a CPU (the hardware approximations are numpy's there), on a GPU with them. The rows are
ragged (the vocabulary is no multiple of a block or of Philox's four words) and split across several programs, seeds
and positions use their high words, and one row has excluded (-inf) ids.
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
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
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


def _rows(device: str, dtype: torch.dtype) -> torch.Tensor:
    vocab = 151_936 if device == "cuda" else 2_083
    gen = torch.Generator().manual_seed(38)
    logits = torch.randn(len(SEEDS), vocab, generator=gen) * 2
    logits[1, ::3] = float("-inf")
    return logits.to(dtype).to(device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", ["reference-0.2", "vllm-mrv2", "philox4", "cross-multiply", "lean-hash", "no-noise"])
def test_each_candidate_samples_its_definitions_token(scripts, name, dtype):
    candidates, definitions = scripts
    device = "cuda" if torch.cuda.is_available() else "cpu"
    logits = _rows(device, dtype)
    seeds = torch.tensor(SEEDS, dtype=torch.int64, device=device)
    positions = torch.tensor(POSITIONS, dtype=torch.int64, device=device)
    launch = candidates.Launch(split=1024, block=256, warps=4)
    got = candidates.race(name, logits, seeds, positions, launch).cpu().tolist()

    rows = logits.double().cpu().numpy()
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


def test_an_unknown_candidate_is_named(scripts):
    candidates, _ = scripts
    with pytest.raises(ValueError, match="'gumbel'"):
        candidates.candidate("gumbel")
