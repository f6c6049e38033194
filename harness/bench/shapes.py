"""What the bench times: the rejection sampler's shapes (``REJECTION_SHAPES``) and their inputs, the budget
batches, and the read-once floors of a shape (the rows its output depends on, read by a plain kernel)."""

from __future__ import annotations

import torch

from . import timing

VOCAB = 151_936
BUDGET_BATCHES = (1, 64, 256, 1024)


# (family, B, K, dtype, draft probs, mode, V, draft noise): the B sweep draws the family's plot.
REJECTION_SHAPES = (
    [("batch", B, 4, torch.float32, True, "random", VOCAB, 0.3) for B in (1, 8, 64, 256, 1024)]
    + [("spec-len", 256, K, torch.float32, True, "random", VOCAB, 0.3) for K in (1, 2, 8)]
    + [("k2", B, 2, torch.float32, True, "random", VOCAB, 0.3) for B in (64, 1024)]
    + [("vocab", 256, 4, torch.float32, True, "random", V, 0.3) for V in (32_000, 128_256)]
    + [("mode", 256, 4, torch.float32, True, mode, VOCAB, 0.3) for mode in ("greedy", "mixed")]
    + [
        ("mode", 256, 4, torch.float32, False, "random", VOCAB, 0.3),
        ("mode", 256, 4, torch.float32, True, "random", VOCAB, 3.0),
        ("mode", 256, 4, torch.bfloat16, True, "random", VOCAB, 0.3),
    ]
)


def rejection_inputs(B, K, dtype, draft_probs, mode, vocab=VOCAB, draft_noise=0.3, seed=0):
    """(``specconform.impl.rejection_sample``'s keyword arguments, the draft logits ``[B * K, V]`` float32 that
    ``draft_probs`` is the softmax of)."""
    gen = torch.Generator(device=timing.DEVICE).manual_seed(seed)
    logits = torch.randn(B * (K + 1), vocab, device=timing.DEVICE, generator=gen) * 2
    # a draft model close to the target (high acceptance) or far from it (low acceptance)
    draft_logits = logits.view(B, K + 1, vocab)[:, :K].reshape(B * K, vocab) + draft_noise * torch.randn(
        B * K, vocab, device=timing.DEVICE, generator=gen
    )
    q = torch.softmax(draft_logits, dim=1)
    drafts = torch.multinomial(q, 1, generator=gen)[:, 0]
    temperature = torch.ones(B, device=timing.DEVICE)
    if mode == "greedy":
        temperature.zero_()
    elif mode == "mixed":
        temperature[::2] = 0
    inputs = dict(
        target_logits=logits.to(dtype),
        draft_token_ids=drafts,
        num_draft_tokens=torch.full((B,), K, device=timing.DEVICE),
        draft_probs=q if draft_probs else None,
        temperature=temperature,
        seeds=torch.arange(B, device=timing.DEVICE),
        positions=torch.zeros(B, dtype=torch.int64, device=timing.DEVICE),
    )
    return inputs, draft_logits


def read_floors(inputs: dict, num_emitted: torch.Tensor) -> dict:
    """The read-once floors of one shape, each the fastest time of a plain reduction kernel
    (``specconform.harness.read_floor``) reading those rows once, timed as a graph replay like ours:

    - ``floor_ms``: the bytes the output depends on, which no correct sampler can skip: for each
      request the target rows up to its first rejection (that row included) or, with every draft
      accepted, up to its bonus row, and for a sampled request with draft probabilities that rejected
      a draft, the ``q`` row of that draft;
    - ``one_pass_floor_ms``: as ``floor_ms``, but every draft row and every sampled bonus row, read
      in one parallel pass before any draft is judged (a greedy bonus row only where reached).

    ``num_emitted [B]``: the accepted drafts plus one of each request, from the PyTorch path (the same
    decisions as the kernels, computed apart from them)."""
    from specconform.harness.read_floor import read_floor_ms

    k = inputs["num_draft_tokens"].to(torch.int64)
    row0 = torch.cumsum(k + 1, 0) - k - 1
    accepted = num_emitted.to(torch.int64) - 1
    sampled = inputs["temperature"] > 0
    j = torch.arange(int(k.max()) + 1, device=k.device)[None, :]  # [1, max K + 1]
    owned = j <= k[:, None]
    depended = owned & (j <= accepted[:, None])
    one_pass = owned & ((j < k[:, None]) | sampled[:, None] | (accepted[:, None] == k[:, None]))
    rejected = accepted < k
    q_rows = (row0 - torch.arange(k.shape[0], device=k.device) + accepted)[rejected & sampled]
    if inputs["draft_probs"] is None:
        q_rows = q_rows[:0]
    row_ids = row0[:, None] + j
    floors = {}
    for name, mask in (("floor", depended), ("one_pass_floor", one_pass)):
        ms, read_bytes = read_floor_ms(
            inputs["target_logits"],
            inputs["draft_probs"],
            row_ids[mask],
            q_rows,
            lambda fn: timing.do_bench(fn, graph=True),
        )
        floors[f"{name}_ms"], floors[f"{name}_bytes"] = ms, read_bytes
    return floors
