"""What one row of each kind costs the reference sampler, against reading it once: for N rows of one
kind, the graph-replay median of ``impl.rejection_sample`` (as ``specconform bench`` times it) and the
read-once floor of those N rows (``specconform.harness.read_floor``), and their ratio. The kinds:

- ``greedy``: N requests with no draft, temperature 0 (an argmax per row);
- ``race``: N requests with no draft, temperature 1 (the exponential race of a bonus row: the reference
  draws' noise for every element);
- ``stats``: N requests with one draft row and draft probabilities, every draft accepted and every
  bonus row forced (not read): a softmax normaliser per row;
- ``one-hot``: as ``stats`` without draft probabilities (one-hot drafts).

From the repository root: ``PYTHONPATH=$PWD python3 scripts/profile-row-costs.py [N ...]`` (default 256
1024); put another checkout's folder first on PYTHONPATH to time its ``impl``.
"""

import sys

import torch

from specconform import impl
from specconform.harness.bench.timing import do_bench
from specconform.harness.read_floor import read_floor_ms

VOCAB = 151_936


def _inputs(kind: str, rows: int, dtype: torch.dtype) -> dict:
    """``impl.rejection_sample``'s arguments for ``rows`` rows of ``kind`` (module docstring)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    drafts = 0 if kind in ("greedy", "race") else 1
    logits = torch.randn(rows * (drafts + 1), VOCAB, device="cuda", generator=gen) * 2
    inputs = dict(
        num_draft_tokens=torch.full((rows,), drafts, device="cuda"),
        temperature=torch.full((rows,), 0.0 if kind == "greedy" else 1.0, device="cuda"),
        seeds=torch.arange(rows, device="cuda"),
        positions=torch.zeros(rows, dtype=torch.int64, device="cuda"),
    )
    if drafts:
        draft_ids = torch.randint(0, VOCAB, (rows,), device="cuda", generator=gen)
        draft_rows = torch.arange(rows, device="cuda") * 2
        logits[draft_rows, draft_ids] = 40.0  # p(d) = 1 in float32: every draft accepted
        forced = torch.full((2 * rows,), -1, dtype=torch.int64, device="cuda")
        forced[draft_rows + 1] = 0  # bonus rows forced: not read
        inputs.update(draft_token_ids=draft_ids, forced_token_ids=forced)
        if kind == "stats":
            inputs["draft_probs"] = torch.softmax(torch.randn(rows, VOCAB, device="cuda", generator=gen), dim=1)
    else:
        inputs["draft_token_ids"] = torch.zeros(0, dtype=torch.int64, device="cuda")
    inputs["target_logits"] = logits.to(dtype)
    return inputs


def main(counts: list[int]) -> None:
    print(torch.cuda.get_device_name(), impl.__file__)
    for dtype in (torch.float32, torch.bfloat16):
        for rows in counts:
            for kind in ("greedy", "race", "stats", "one-hot"):
                inputs = _inputs(kind, rows, dtype)

                def ours(inputs=inputs):
                    return impl.rejection_sample(**inputs, max_spec_len=1, validate=False, backend="triton")

                emitted = ours().num_emitted
                expected = 1 if kind in ("greedy", "race") else 2
                assert bool((emitted == expected).all()), f"{kind}: not every row went as planned"
                graph_ms = do_bench(ours, graph=True)
                step = 1 if kind in ("greedy", "race") else 2
                read_rows = torch.arange(0, rows * step, step, device="cuda")
                floor_ms, read_bytes = read_floor_ms(
                    inputs["target_logits"],
                    None,
                    read_rows,
                    read_rows[:0],
                    lambda fn: do_bench(fn, graph=True),
                )
                print(
                    f"{str(dtype)[6:]:9s} N={rows:<5d} {kind:8s} ours {graph_ms * 1e3:8.1f} us  floor"
                    f" {floor_ms * 1e3:8.1f} us ({read_bytes / floor_ms / 1e9:.2f} TB/s)  ours/floor"
                    f" {graph_ms / floor_ms:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [256, 1024])
