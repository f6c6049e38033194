"""Batched incremental forward passes of the tiny Qwen3 model over one key/value pool shared by the batch.

The pool has one row per request slot of the engine. A pass runs every request's new tokens in one batch:
the model's own modules compute everything but the attention. Per layer, the new keys and values are written
into each request's row at their positions, and then each row is gathered (padded to the longest, masked) in
one indexing operation and attended to causally, so no pass copies a request's cache more than once per layer.
A pass only writes keys and values past each request's cached length; the caller owns the lengths and advances
them when it commits a step, so a pass that fails changes nothing a request can see. A request's logits do not
depend on the other requests in the batch (up to additions of exact zeros at masked positions).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from transformers.models.qwen3.modeling_qwen3 import apply_rotary_pos_emb


class KVPool:
    """Keys and values of up to ``rows`` requests: ``tensor [rows, layers, 2, kv_heads, capacity, head_dim]``
    in the model's dtype, on its device. Which positions of a row are valid is the caller's to track."""

    def __init__(self, model, rows: int, capacity: int):
        config = model.config
        shape = (rows, config.num_hidden_layers, 2, config.num_key_value_heads, capacity, config.head_dim)
        self.tensor = torch.zeros(shape, dtype=model.dtype, device=model.device)
        self.capacity = capacity


@torch.no_grad()
def forward(
    model, pool: KVPool, rows: Sequence[int], lengths: Sequence[int], new_tokens: Sequence[Sequence[int]]
) -> list[torch.Tensor]:
    """Run ``new_tokens[i]`` (at least one each) after the first ``lengths[i]`` cached positions of pool row
    ``rows[i]``; write their keys and values at positions ``lengths[i]`` onwards.

    Returns the logits ``[len(rows), V]`` (the model's dtype) after each request's last new token; the language-model
    head runs on those positions only, so a long prompt costs no logits that nobody reads.
    """
    inner, device = model.model, model.device
    batch, width = len(new_tokens), max(len(tokens) for tokens in new_tokens)
    if any(not tokens for tokens in new_tokens):
        raise ValueError("every request of a forward pass needs at least one new token")
    span = max(n + len(t) for n, t in zip(lengths, new_tokens))  # the pool positions any request reads
    if span > pool.capacity:
        raise ValueError(f"a request would pass the key/value pool's {pool.capacity} positions")
    ids = torch.tensor([list(tokens) + [0] * (width - len(tokens)) for tokens in new_tokens], device=device)
    widths = torch.tensor([len(tokens) for tokens in new_tokens], device=device)
    lengths = torch.tensor(lengths, device=device)
    rows = torch.tensor(rows, device=device)
    columns = torch.arange(width, device=device)
    positions = lengths[:, None] + columns[None, :]  # [batch, width]
    # A request's new keys are written at its positions before its queries attend, so key position j is visible to
    # new query t if j <= lengths + t: its cached keys and its new ones up to t. Past that lie padding and what
    # earlier passes left behind, masked.
    visible = (torch.arange(span, device=device)[None, None, :] <= positions[:, :, None])[:, None]
    request, column = (columns[None, :] < widths[:, None]).nonzero(as_tuple=True)  # the real (unpadded) tokens
    written_rows, written_positions = rows[request], positions[request, column]
    hidden = inner.embed_tokens(ids)
    position_embeddings = inner.rotary_emb(hidden, positions)
    for index, layer in enumerate(inner.layers):
        attention = layer.self_attn
        x = layer.input_layernorm(hidden)
        shape = (batch, width, -1, attention.head_dim)
        query = attention.q_norm(attention.q_proj(x).view(shape)).transpose(1, 2)
        key = attention.k_norm(attention.k_proj(x).view(shape)).transpose(1, 2)
        value = attention.v_proj(x).view(shape).transpose(1, 2)
        query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
        new_kv = torch.stack([key, value], dim=1)  # [batch, 2, kv_heads, width, head_dim]
        layer_pool = pool.tensor[:, index]  # a view [rows, 2, kv_heads, capacity, head_dim]
        layer_pool[written_rows, :, :, written_positions] = new_kv[request, :, :, column]
        # [batch, 2, kv_heads, span, head_dim], this pass's keys included (index_select copies faster than indexing)
        cache = layer_pool[:, :, :, :span].index_select(0, rows)
        out = F.scaled_dot_product_attention(
            query, cache[:, 0], cache[:, 1], attn_mask=visible, scale=attention.scaling, enable_gqa=True
        )
        hidden = hidden + attention.o_proj(out.transpose(1, 2).reshape(batch, width, -1))
        hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
    last = hidden[torch.arange(batch, device=device), widths - 1]  # [batch, hidden]: each request's last new token
    return model.lm_head(inner.norm(last))
