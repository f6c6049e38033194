"""The embedded engine's cached, batched forward pass against the model's own full forward."""

import pytest
import torch

pytest.importorskip("transformers", reason="the embedded engine needs transformers")

from specconform.embedded import model as tiny_model  # noqa: E402
from specconform.embedded.forward import KVPool, forward  # noqa: E402


@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model.build("single").path, dtype=torch.float64).eval()


def test_cached_batched_steps_equal_the_full_forward_of_each_sequence(model):
    # forward returns the logits after each request's last new token ([batch, V]); the model's own full forward of
    # each whole sequence gives them at every position
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    long, short = (torch.randint(0, vocab, (n,), generator=generator).tolist() for n in (30, 12))
    with torch.no_grad():
        expected = [model(input_ids=torch.tensor([s])).logits[0] for s in (long, short)]
        pool = KVPool(model, 3, 64)
        rows = [2, 0]  # any rows of the pool, in any order
        first = forward(model, pool, rows, [0, 0], [long[:20], short[:5]])
        got = [[first[0]], [first[1]]]
        want = [[expected[0][19]], [expected[1][4]]]
        for i in range(5, 12):  # one token each per step, the short sequence from a shorter cache
            logits = forward(model, pool, rows, [i + 15, i], [[long[i + 15]], [short[i]]])
            got[0].append(logits[0])
            got[1].append(logits[1])
            want[0].append(expected[0][i + 15])
            want[1].append(expected[1][i])
        # rejected drafts: positions 8.. of the short sequence are forgotten by running them again from length 8
        again = forward(model, pool, rows[1:], [8], [short[8:]])[0]
        alone = forward(model, KVPool(model, 1, 64), [0], [0], [long[:20]])[0]
    for logits, full in zip(got, want):
        assert torch.allclose(torch.stack(logits), torch.stack(full), rtol=0, atol=1e-12)
    assert torch.allclose(again, expected[1][11], rtol=0, atol=1e-12)
    assert torch.allclose(alone, first[0], rtol=0, atol=1e-12)  # alone as in a batch


def test_a_pass_beyond_the_pool_raises_and_writes_nothing(model):
    pool = KVPool(model, 1, 8)
    before = pool.tensor.clone()
    with pytest.raises(ValueError, match="8 positions"):
        forward(model, pool, [0], [4], [[1, 2, 3, 4, 5]])
    assert torch.equal(pool.tensor, before)
