"""The read-once floor of the bench: which rows it reads, and that its reader reads them."""

import pytest
import torch

from tests.conftest import HAS_TRITON

pytestmark = pytest.mark.skipif(not HAS_TRITON, reason="needs triton")
VOCAB = 37


def _inputs(num_draft, temperature, with_q=True, dtype=torch.float32):
    batch, drafts = len(num_draft), sum(num_draft)
    gen = torch.Generator().manual_seed(0)
    return dict(
        target_logits=torch.randn(drafts + batch, VOCAB, generator=gen).to(dtype),
        draft_token_ids=torch.zeros(drafts, dtype=torch.int64),
        num_draft_tokens=torch.tensor(num_draft),
        draft_probs=torch.softmax(torch.randn(drafts, VOCAB, generator=gen), dim=1) if with_q else None,
        temperature=torch.tensor(temperature, dtype=torch.float32),
    )


def _expected_rows(num_draft, temperature, emitted, with_q):
    """(rows the output depends on, rows a one-pass sampler reads, rejected q rows), request by request."""
    depended, one_pass, q_rows = [], [], []
    row, draft = 0, 0
    for k, t, e in zip(num_draft, temperature, emitted):
        accepted = e - 1
        depended += [row + j for j in range(accepted + 1)]
        one_pass += [row + j for j in range(k)] + ([row + k] if t > 0 or accepted == k else [])
        if t > 0 and accepted < k and with_q:
            q_rows.append(draft + accepted)
        row, draft = row + k + 1, draft + k
    return depended, one_pass, q_rows


@pytest.mark.parametrize("with_q", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_floor_reads_the_rows_the_output_depends_on(monkeypatch, with_q, dtype):
    from specconform.harness.bench import shapes, timing

    monkeypatch.setattr(timing, "do_bench", lambda fn, graph: fn() or 1.0)
    num_draft, temperature, emitted = [3, 0, 2, 4, 1], [1.0, 0.7, 0.0, 0.0, 2.0], [2, 1, 3, 1, 2]
    inputs = _inputs(num_draft, temperature, with_q, dtype)
    floors = shapes.read_floors(inputs, torch.tensor(emitted, dtype=torch.int32))
    depended, one_pass, q_rows = _expected_rows(num_draft, temperature, emitted, with_q)
    row_bytes, q_bytes = VOCAB * inputs["target_logits"].element_size(), VOCAB * 4
    assert floors["floor_bytes"] == len(depended) * row_bytes + len(q_rows) * q_bytes
    assert floors["one_pass_floor_bytes"] == len(one_pass) * row_bytes + len(q_rows) * q_bytes
    assert floors["floor_ms"] == floors["one_pass_floor_ms"] == 1.0


def test_reader_sums_each_listed_row():
    from specconform.harness.read_floor import READERS, read_floor_ms

    inputs = _inputs([2, 3], [1.0, 1.0])
    target_rows, q_rows = torch.tensor([0, 4, 6]), torch.tensor([1, 3])
    launches = []
    ms, read_bytes = read_floor_ms(
        inputs["target_logits"], inputs["draft_probs"], target_rows, q_rows, lambda fn: launches.append(fn) or 1.0
    )
    assert (ms, read_bytes) == (1.0, 5 * VOCAB * 4) and len(launches) == len(READERS)
    expected = torch.cat([inputs["target_logits"][target_rows].sum(1), inputs["draft_probs"][q_rows].sum(1)])
    for launch in launches:
        sums = launch.__defaults__[-1]
        launch()
        torch.testing.assert_close(sums.sum(1), expected, rtol=1e-5, atol=1e-5)
