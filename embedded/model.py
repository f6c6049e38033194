"""The embedded engine's tiny model, generated offline and deterministically (nothing is downloaded).

A byte-level BPE tokenizer is trained on a corpus generated from a fixed seed; a Qwen3-style causal
LM gets random weights from the same seed. Two tokenizer variants:

- ``single``: ``<think>`` and ``</think>`` are one special token each;
- ``multi``: ``<think>`` is special, ``</think>`` is ordinary text of several tokens (``<``, ``/``,
  ``think``, ``>``): the multi-token end marker.

The chat template ends an assistant prompt with ``<think>\\n`` (prompt-opened thinking) unless
``enable_thinking`` is false, which closes the section in the prompt; earlier assistant turns show
their ``reasoning_content`` inside the markers, as Qwen3's template does (llama.cpp recognises a
thinking template by that).
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from pathlib import Path

VARIANTS = ("single", "multi")
HEAD_DIMS = (16, 64)
SEED = 20261121
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' and m['reasoning_content'] is defined and m['reasoning_content'] %}"
    "<think>\n{{ m['reasoning_content'] }}\n</think>\n\n{% endif %}{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)
WORDS = (
    "think",
    "answer",
    "the",
    "so",
    "because",
    "number",
    "first",
    "then",
    "check",
    "result",
    "plan",
    "step",
    "value",
    "sum",
    "prime",
    "list",
    "reason",
    "final",
    "maybe",
    "wait",
)


@dataclass(frozen=True)
class TinyModel:
    """Paths and ids of one generated model directory."""

    path: Path
    variant: str
    start_token_ids: tuple[int, ...]
    end_token_ids: tuple[int, ...]
    eos_token_id: int


def _corpus(seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        lines.append(" ".join(words) + rng.choice([".", "?", "!", " 42.", " = 7"]))
    return lines + ["<think> so the answer </think> the answer"] * 5


def cache_dir() -> Path:
    return Path(os.environ.get("SPECCONFORM_CACHE", Path.home() / ".cache" / "specconform"))


def build(variant: str = "single", directory: Path | None = None, head_dim: int = 16) -> TinyModel:
    """Build (or reuse) the tiny model of ``variant`` under the cache directory.

    ``head_dim`` is the attention head size: 16 by default, 64 for engines whose attention kernels
    reject smaller heads (vLLM's CPU attention); the tokenizer and everything else stay the same."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}; got {head_dim!r}")
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    variant_name = variant if head_dim == 16 else f"{variant}-hd{head_dim}"  # head_dim 16 keeps its old cache key
    key = hashlib.sha256(f"{variant_name}-{SEED}-{CHAT_TEMPLATE}-v1".encode()).hexdigest()[:12]
    path = directory or cache_dir() / "models" / f"tiny-qwen3-{variant_name}-{key}"
    if not (path / "model.safetensors").exists():
        raw = Tokenizer(models.BPE())
        raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        raw.decoder = decoders.ByteLevel()
        raw.post_processor = processors.ByteLevel(trim_offsets=False)
        trainer = trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=SPECIALS,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        raw.train_from_iterator(_corpus(SEED), trainer=trainer)
        raw.add_special_tokens(["<think>", "</think>"] if variant == "single" else ["<think>"])
        tokenizer = PreTrainedTokenizerFast(
            tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
        )
        torch.manual_seed(SEED)
        config = Qwen3Config(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=head_dim,
            max_position_embeddings=1024,
            tie_word_embeddings=True,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = Qwen3ForCausalLM(config)
        path.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(path)
        model.save_pretrained(path)
    return describe(path, variant)


def describe(path: Path, variant: str) -> TinyModel:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    start = tokenizer.encode("<think>", add_special_tokens=False)
    end = tokenizer.encode("</think>", add_special_tokens=False)
    if variant == "multi" and len(end) < 2 or variant == "single" and len(end) != 1:
        raise RuntimeError(f"tokenizer {path} encodes </think> as {end}, not the {variant} variant")
    return TinyModel(path, variant, tuple(start), tuple(end), tokenizer.eos_token_id)
