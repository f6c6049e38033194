"""The proof patch of Model Runner V2's empty residual (proofs/vllm-0.33-mrv2/empty-residual-emits-token-0.diff), on
the step it changes: ``_insert_resampled_kernel``, which combines the resample kernel's per-block Gumbel argmaxes.

On the hunt record's request the residual max(p - q, 0) has no mass, so every block's argmax is -inf. Unpatched the
combine picks block 0's index 0, an id the target masks (RS-INPUT-2); patched it emits the target's own draw there,
a sample of p (RS-PROB-4), which the oracle's ``vllm-mrv2`` scheme computes apart. A row with residual mass is
combined as before. The whole sampler runs on a GPU (scripts/prove-hunt-gpu.sh): under the Triton interpreter the
resample kernel does not run, the combine does. Skipped without vLLM 0.33; on a CPU it needs ``TRITON_INTERPRET=1``
and ``CUDA_VISIBLE_DEVICES=``."""

import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() and (
    os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
):
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)

from vllm.v1.worker.gpu.spec_decode import rejection_sampler_utils as unpatched  # noqa: E402

from specconform.harness.oracle.draws import vllm_mrv2  # noqa: E402
from specconform.harness.proofs import patch_into  # noqa: E402
from specconform.harness.vectors import case_from_json  # noqa: E402

PROOFS = Path(__file__).resolve().parents[2] / "proofs" / "vllm-0.33-mrv2"
BLOCK = 1024  # rejection_sample's RESAMPLE_BLOCK_SIZE


@pytest.fixture(scope="module")
def patched(tmp_path_factory):
    """The patched module, loaded from its patched file under a name of its own (the installed one stays loaded)."""
    modules = patch_into(PROOFS / "empty-residual-emits-token-0.diff", tmp_path_factory.mktemp("patched"))
    ((path, _installed),) = modules.values()
    spec = importlib.util.spec_from_file_location("patched_rejection_sampler_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def case():
    record = json.loads((PROOFS / "empty-residual-emits-token-0.hunt.json").read_text())
    return case_from_json(record["violations"][0]["case"])


def combine(module, case, local_max, local_argmax):
    """``_insert_resampled_kernel`` on the case's request rejected at row 0: the id it emits there. ``local_max`` and
    ``local_argmax`` ``[blocks]``: the resample kernel's per-block Gumbel maxima (float32) and their ids (int64)."""
    temperature = torch.tensor([float(case.temperature[0])], dtype=torch.float32)
    target = torch.tensor(case.target_logits, dtype=torch.float32) / temperature  # vLLM's logits after temperature
    rows, vocab = target.shape
    sampled = torch.zeros((1, rows), dtype=torch.int64)
    arguments = [
        sampled,
        sampled.stride(0),
        torch.zeros(1, dtype=torch.int32),  # num_sampled: rejected at row 0
        local_argmax[None],
        local_argmax.shape[0],
        local_max[None],
        local_max.shape[0],
        local_max.shape[0],
        torch.tensor([0, rows], dtype=torch.int32),
        torch.zeros(rows, dtype=torch.int32),
        temperature,
    ]
    padded = {"PADDED_RESAMPLE_NUM_BLOCKS": 2}
    if module is not unpatched:
        seed = torch.tensor([int(case.seeds[0])])
        pos = torch.tensor(int(case.positions[0])) + torch.arange(rows)
        arguments += [target, target.stride(0), seed, pos, vocab]
        padded.update(RESAMPLE_BLOCK_SIZE=BLOCK, USE_FP64=False)
    module._insert_resampled_kernel[(1,)](*arguments, **padded)
    return int(sampled[0, 0])


def test_an_empty_residual_emits_token_0_unpatched_and_the_targets_draw_patched(patched, case):
    blocks = -(-case.vocab_size // BLOCK)
    local_max = torch.full((blocks,), float("-inf"))
    local_argmax = torch.arange(blocks, dtype=torch.int64) * BLOCK  # a block's index 0 where all is -inf
    assert case.target_logits[0, 0] == -np.inf
    assert combine(unpatched, case, local_max, local_argmax) == 0
    logits = case.target_logits[0].astype(np.float32) / np.float32(case.temperature[0])
    expected, lead = vllm_mrv2.gumbel_argmax(logits.astype(np.float64), int(case.seeds[0]), int(case.positions[0]))
    assert lead > 1e-3  # a clear winner: float32 noise cannot turn it
    emitted = combine(patched, case, local_max, local_argmax)
    assert emitted == expected and np.isfinite(case.target_logits[0, emitted])


def test_a_residual_with_mass_is_combined_as_before(patched, case):
    local_max = torch.tensor([float("-inf"), 2.5])
    local_argmax = torch.tensor([0, 1024], dtype=torch.int64)
    assert combine(patched, case, local_max, local_argmax) == combine(unpatched, case, local_max, local_argmax) == 1024
