"""The embedded engine's cached, batched forward pass against the model's own full forward."""

import pytest
import torch

pytest.importorskip("transformers", reason="the embedded engine needs transformers")

from embedded import model as tiny_model  # noqa: E402
from embedded.forward import KVCache, forward  # noqa: E402


@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model.build("single").path, dtype=torch.float64).eval()


def test_cached_batched_steps_equal_the_full_forward_of_each_sequence(model):
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    long, short = (torch.randint(0, vocab, (n,), generator=generator).tolist() for n in (30, 12))
    with torch.no_grad():
        expected = [model(input_ids=torch.tensor([s])).logits[0] for s in (long, short)]
    caches = [KVCache(model, 64), KVCache(model, 64)]
    got = [list(rows) for rows in forward(model, caches, [long[:20], short[:5]])]
    for i in range(5, 12):  # one token each per step, the short sequence from a shorter cache
        rows = forward(model, caches, [[long[i + 15]], [short[i]]])
        got[0].append(rows[0][0])
        got[1].append(rows[1][0])
    caches[1].crop(8)  # rejected drafts: forget positions 8.. and run them again
    again = forward(model, caches[1:], [short[8:]])[0]
    for rows, full in zip(got, expected):
        assert torch.allclose(torch.stack(rows), full[: len(rows)], rtol=0, atol=1e-12)
    assert torch.allclose(again, expected[1][8:], rtol=0, atol=1e-12)
    alone = forward(model, [KVCache(model, 64)], [long[:20]])[0]
    assert torch.allclose(alone, torch.stack(got[0][:20]), rtol=0, atol=1e-12)  # alone as in a batch
