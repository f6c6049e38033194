"""Counting mutants: accepted-token counting and the acceptance metrics with one rule broken."""

from __future__ import annotations

import numpy as np


class CountingMutants:
    """The counting entry points of an engine whose ``mutant`` names one bug: a mixin placed before the
    oracle engine, whose entry points it calls for everything the bug leaves alone."""

    def count_emitted(self, token_ids, vocab_size):
        tokens = np.asarray(token_ids)
        if self.mutant.name == "count-non-placeholders":
            out_of_vocab = super().count_emitted(token_ids, vocab_size)[2]  # ids outside [0, V) still reported
            return (tokens != -1).sum(axis=1), np.zeros(len(tokens), bool), np.asarray(out_of_vocab)
        num, broken, out_of_vocab = (list(x) for x in super().count_emitted(token_ids, vocab_size))
        if self.mutant.name == "count-includes-first-placeholder":
            num = [min(n + 1, tokens.shape[1]) if n else 0 for n in num]
        if self.mutant.name == "discarded-row-counts-one":
            num = [max(n, 1) for n in num]
        if self.mutant.name == "out-of-vocab-unreported":
            out_of_vocab = [False] * len(num)
        return num, broken, out_of_vocab

    def acceptance_metrics(self, steps, eos_token_ids):
        if self.mutant.name == "commit-limit-ignored":
            steps = [(k, row, None) for k, row, _ in steps]
        metrics = super().acceptance_metrics(
            steps, () if self.mutant.name == "mean-length-counts-after-eos" else eos_token_ids
        )
        drafted = sum(k for k, _, _ in steps)
        if self.mutant.name == "acceptance-rate-counts-bonus" and drafted:
            drafts = sum(1 for k, row, _ in steps if k and row[0] != -1)
            metrics["acceptance_rate"] = metrics["acceptance_rate"] + drafts / drafted
        if self.mutant.name == "draft-count-from-configured-maximum" and drafted:
            maximum = max(k for k, _, _ in steps)  # the configured number of drafts: the most any step drafted
            configured = maximum * sum(1 for k, _, _ in steps if k)  # every drafting step counted at the maximum
            metrics["acceptance_rate"] = metrics["acceptance_rate"] * drafted / configured
        if self.mutant.name == "mean-length-without-bonus":
            metrics["mean_acceptance_length"] = metrics["mean_acceptance_length"] - 1.0
        if self.mutant.name == "per-position-shifted":
            metrics["accepted_per_position"] = list(metrics["accepted_per_position"][1:]) + [0]
        return metrics
