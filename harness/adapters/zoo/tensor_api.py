"""Tensor-level API mutants (capability ``tensor-api``): the reference engine whose own entry points carry one
bug."""

from __future__ import annotations

from .registry import Mutant

TENSOR_API_MUTATIONS = (
    "spec-len-cast-to-int",
    "step-commits-after-its-rows",
    "sampler-spec-len-cast-to-int",
    "vocab-size-cast-to-int",
)


class _CommitsAfterRows:
    """A budget state whose steps lay out their rows before committing the tokens given to them
    (``step-commits-after-its-rows``)."""

    def __init__(self, state):
        self.state = state

    def __getattr__(self, name):
        return getattr(self.state, name)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None, *, sampled_token_ids=None):
        rows = self.state.forced_tokens(num_draft_tokens, draft_token_ids)
        if sampled_token_ids is not None:
            self.state.update_state(sampled_token_ids)
        return rows

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None, *, sampled_token_ids=None):
        self.state.apply_to_logits(logits, num_draft_tokens, draft_token_ids)
        if sampled_token_ids is not None:
            self.state.update_state(sampled_token_ids)
        return logits


def tensor_api_mutant(mutant: Mutant):
    """The reference engine (capability ``tensor-api``) whose tensor entry points carry one bug."""
    from ..reference import ReferenceEngine, ReferenceTensorApi

    class MutantTensorApi(ReferenceTensorApi):
        def budget_state(self, start_token_ids, end_token_ids, max_num_reqs, **options):
            if mutant.name == "spec-len-cast-to-int":
                options["max_spec_len"] = int(options.get("max_spec_len", 0))
            state = super().budget_state(start_token_ids, end_token_ids, max_num_reqs, **options)
            return _CommitsAfterRows(state) if mutant.name == "step-commits-after-its-rows" else state

        def rejection_sample(self, target_logits, draft_token_ids, num_draft_tokens, **options):
            if mutant.name == "sampler-spec-len-cast-to-int" and options.get("max_spec_len") is not None:
                options["max_spec_len"] = int(options["max_spec_len"])
            return super().rejection_sample(target_logits, draft_token_ids, num_draft_tokens, **options)

        def count_emitted_validated(self, token_ids, vocab_size):
            if mutant.name == "vocab-size-cast-to-int":
                vocab_size = int(vocab_size)
            return super().count_emitted_validated(token_ids, vocab_size)

    engine = ReferenceEngine()
    engine.name, engine.mutant = f"zoo:{mutant.name}", mutant
    engine.tensor_api = MutantTensorApi(engine)
    return engine
