"""The hunt's launchers of vLLM's samplers (specconform.harness.hunt.launchers): Model Runner V2's is handed, for each
request of the batch, what the adapter hands vLLM for that request alone; the legacy sampler's hunt runs through its
adapter. Skipped without vLLM 0.33; on a CPU it needs ``TRITON_INTERPRET=1`` and ``CUDA_VISIBLE_DEVICES=``."""

import os

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() and (
    os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
):
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)

from specconform.harness.adapters import make_engine  # noqa: E402
from specconform.harness.hunt import HuntOptions, hunt  # noqa: E402
from specconform.harness.hunt.launchers import Mrv2Launcher  # noqa: E402
from specconform.harness.hunt.rows import build_rows  # noqa: E402
from specconform.harness.hunt.run import request_case  # noqa: E402

PER_ROW = ("target_logits", "draft_sampled", "pos", "expanded_local_pos")


@pytest.mark.parametrize("one_hot", [False, True])
def test_model_runner_v2_sees_each_request_as_the_adapter_hands_it_alone(one_hot):
    engine = make_engine("specconform.harness.adapters.vllm_mrv2:make")
    rows = build_rows(66, 17, 5, engine.device)
    launcher = Mrv2Launcher(engine, rows, seed=7)
    seen = []

    # the arguments vLLM's rejection_sample is called with, instead of its kernels (the adapter's output is not judged)
    def rejection_sample(**arguments):
        seen.append(arguments)
        requests = arguments["cu_num_logits"].shape[0] - 1
        width = arguments["num_speculative_steps"] + 1
        return torch.zeros((requests, width), dtype=torch.int64), torch.ones(requests, dtype=torch.int32)

    engine.vllm.rejection_sample = rejection_sample
    launcher.launch(3, one_hot)
    batch = seen.pop()
    seeds, starts = launcher.request_seeds(3), batch["cu_num_logits"].tolist()
    compared = 0
    for i in range(rows.batch_size):
        k = int(rows.num_draft_tokens[i])
        if k == 0:  # alone, a request without drafts goes to vLLM's plain sampler
            continue
        engine.rejection_sample(request_case(rows, i, int(seeds[i]), one_hot))
        alone, span = seen.pop(), slice(starts[i], starts[i] + k + 1)
        for name in PER_ROW:
            assert torch.equal(alone[name], batch[name][span]), (i, name)
        assert float(alone["temperature"][0]) == float(batch["temperature"][i])
        assert int(alone["seed"][0]) == int(batch["seed"][i])
        if one_hot:
            assert alone["draft_logits"] is None and batch["draft_logits"] is None
        else:
            assert torch.equal(alone["draft_logits"][0, :k], batch["draft_logits"][i, :k])
        compared += 1
    assert compared > 10


def test_the_legacy_sampler_is_hunted_through_its_adapter():
    record = hunt(HuntOptions("specconform.harness.adapters.vllm:make", 200, 66, 17, 3, 300.0), None)
    assert record.draws >= 200 and record.engine == "vllm-0.33-v1"
    outside = {inv.name: inv.outside for inv in record.invariants if inv.outside}
    assert list(outside) == ["q-zero-draft-rejected"]  # its profile declares drafts-sampled-from-q
    assert all(inv.opportunities > 0 for inv in record.invariants if not inv.outside)
