"""Engines that declare a contract or derived observables, plugged in as ``module:factory`` by
``tests/harness/test_contract.py``."""

from dataclasses import replace

from specconform.harness import contract
from specconform.harness.adapters.oracle import OracleEngine


class SampledDraftsOnly(OracleEngine):
    """The oracle, declaring that its drafts are sampled from the q it is handed; a case with a draft outside
    q's support is a bug of the harness, so it raises (the run records the check ERROR)."""

    def __init__(self):
        super().__init__()
        self.name = "sampled-drafts-only"
        self.profile = replace(self.profile, name=self.name, contract=frozenset({"drafts-sampled-from-q"}))

    def rejection_sample(self, case):
        needs = contract.rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
        assert not needs, f"handed a case outside the contract: {needs}"
        return super().rejection_sample(case)


class DerivedFlags(OracleEngine):
    """The oracle's counts with malformed-row flags its adapter makes up (always False), declared derived."""

    def __init__(self):
        super().__init__()
        self.name = "derived-flags"
        self.profile = replace(self.profile, name=self.name, derived=frozenset({"broken_prefix", "out_of_vocab"}))

    def count_emitted(self, token_ids, vocab_size):
        num, broken, _ = super().count_emitted(token_ids, vocab_size)
        return num, [False] * len(num), [False] * len(num)


def sampled_drafts_only():
    return SampledDraftsOnly()


def derived_flags():
    return DerivedFlags()
