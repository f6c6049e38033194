"""A lead about SGLang 0.5.23's budget B, run on its own grammar code (``specconform.harness.adapters.sglang_strict``).

    TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= PYTHONPATH=. python proofs/sglang-0.5.23-strict/leads.py

A reasoning parser without excluded tokens leaves ``max_thinking_tokens`` unapplied: ``ReasonerGrammarBackend``
turns its token filter on only when the parser excludes tokens while thinking or ``SGLANG_MAX_THINK_TOKENS`` is set
(``reasoner_grammar_backend.py`` lines 405-407), and ``fill_vocab_mask`` does nothing while thinking without it
(lines 272-274), although the tokenizer manager accepts the field under ``--enable-strict-thinking`` (lines 905-913)
and the grammar manager sets the object's ``max_think_tokens`` from it. ``deepseek-r1``, ``step3`` and ``gigachat35``
are such parsers. Prints the forced rows for one request with budget 1 over three thinking tokens, under ``qwen3``
(the adapter's parser, which excludes four tokens) and ``deepseek-r1``.
"""

from __future__ import annotations

from specconform.harness.adapters.sglang_strict import StrictBudget, make
from specconform.specs.interface import AddedRequest, BatchUpdate


def forced_rows(engine, model_type: str) -> list[int]:
    state = StrictBudget(engine, [100], [101], 1, model_type=model_type)
    state.sync_batch(BatchUpdate(batch_size=1, added=[AddedRequest(0, 1, (1, 100))]))
    rows = []
    for token in (5, 6, 7):
        rows.append(state.forced_tokens(None, None)[0])
        state.update_state([[token]])
    return rows


def main() -> None:
    engine = make()
    for model_type in ("qwen3", "deepseek-r1"):
        print(f"--reasoning-parser {model_type}, max_thinking_tokens 1: forced rows {forced_rows(engine, model_type)}")


if __name__ == "__main__":
    main()
