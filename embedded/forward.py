"""Batched incremental forward passes of the tiny Qwen3 model, with a key/value cache per request.

Each request keeps its own cache; a step runs every request's new tokens in one batch. The model's own
modules compute everything but the attention, which reads the cached keys of each request (padded to the
longest cache, masked) and then its new tokens causally. A request's logits therefore do not depend on the
other requests in the batch (up to the order of additions of exact zeros at padded positions).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.models.qwen3.modeling_qwen3 import apply_rotary_pos_emb


class KVCache:
    """Keys and values of one request: ``[layers, 2, kv_heads, capacity, head_dim]`` float, ``length`` filled."""

    def __init__(self, model, capacity: int):
        config = model.config
        shape = (config.num_hidden_layers, 2, config.num_key_value_heads, capacity, config.head_dim)
        self.tensor = torch.zeros(shape, dtype=model.dtype, device=model.device)
        self.length = 0

    def crop(self, length: int) -> None:
        """Forget everything after the first ``length`` positions (rejected drafts)."""
        self.length = min(self.length, length)


@torch.no_grad()
def forward(model, caches: list[KVCache], new_tokens: list[list[int]]) -> list[torch.Tensor]:
    """Run ``new_tokens[i]`` (at least one each) after ``caches[i]``; append their keys and values.

    Returns per request the logits ``[len(new_tokens[i]), V]`` (the model's dtype).
    """
    inner, device = model.model, model.device
    batch, width = len(new_tokens), max(len(tokens) for tokens in new_tokens)
    cached = max(cache.length for cache in caches)
    ids = torch.zeros((batch, width), dtype=torch.int64)
    lengths = torch.tensor([cache.length for cache in caches])
    for row, tokens in enumerate(new_tokens):
        ids[row, : len(tokens)] = torch.tensor(tokens)
    ids, lengths = ids.to(device), lengths.to(device)
    columns = torch.arange(width, device=device)
    positions = lengths[:, None] + columns[None, :]
    # key j of the cached part is visible if j < length; new key u is visible to new query t if u <= t
    visible = torch.cat(
        [
            (torch.arange(cached, device=device)[None, None, :] < lengths[:, None, None]).expand(batch, width, cached),
            (columns[None, :] <= columns[:, None]).expand(batch, width, width),
        ],
        dim=2,
    )[:, None]
    past = torch.zeros((batch, *caches[0].tensor.shape[:-2], cached, caches[0].tensor.shape[-1]), dtype=model.dtype)
    past = past.to(device)
    for row, cache in enumerate(caches):
        past[row, ..., : cache.length, :] = cache.tensor[..., : cache.length, :]
    hidden = inner.embed_tokens(ids)
    position_embeddings = inner.rotary_emb(hidden, positions)
    new_kv = []
    for index, layer in enumerate(inner.layers):
        attention = layer.self_attn
        x = layer.input_layernorm(hidden)
        shape = (batch, width, -1, attention.head_dim)
        query = attention.q_norm(attention.q_proj(x).view(shape)).transpose(1, 2)
        key = attention.k_norm(attention.k_proj(x).view(shape)).transpose(1, 2)
        value = attention.v_proj(x).view(shape).transpose(1, 2)
        query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
        new_kv.append(torch.stack([key, value], dim=1))  # [batch, 2, kv_heads, width, head_dim]
        keys = torch.cat([past[:, index, 0], key], dim=2).repeat_interleave(attention.num_key_value_groups, dim=1)
        values = torch.cat([past[:, index, 1], value], dim=2).repeat_interleave(attention.num_key_value_groups, dim=1)
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=visible, scale=attention.scaling)
        hidden = hidden + attention.o_proj(out.transpose(1, 2).reshape(batch, width, -1))
        hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
    logits = model.lm_head(inner.norm(hidden))
    written = torch.stack(new_kv, dim=1)  # [batch, layers, 2, kv_heads, width, head_dim]
    out = []
    for row, (cache, tokens) in enumerate(zip(caches, new_tokens)):
        cache.tensor[..., cache.length : cache.length + len(tokens), :] = written[row, ..., : len(tokens), :]
        cache.length += len(tokens)
        out.append(logits[row, : len(tokens)])
    return out
