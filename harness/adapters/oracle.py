"""The executable oracle as an engine: every check must pass against it."""

from __future__ import annotations

import platform

import numpy as np

from specconform.specs.interface import RejectionCase

from .. import profiles
from ..oracle import budget as tb
from ..oracle import counting as ac
from ..oracle import rejection as rs


class OracleEngine:
    """The executable oracle itself: every check must pass against it."""

    name = "oracle"
    version = "spec-0.3"
    device = f"cpu ({platform.machine()})"
    # The oracle samples one request at a time in plain Python, so the trials TV 0.03 needs would keep it busy for
    # far longer than every other engine's checks together: its statistical checks default to TV 0.05.
    statistical_deviation = 0.05

    def __init__(self):
        # it is given a forced phrase (TB-END-1) or other end markers (TB-END-3) when a check names them, and
        # forces E with E alone otherwise: it claims those variants' classes beside the canonical ones
        profile = profiles.with_variant(profiles.canonical(), "forced_end", "phrase")
        self.profile = profiles.with_variant(profile, "end_markers", "several")

    def budget_state(
        self, start, end, max_num_reqs, scope="request", max_spec_len=0, forced_token_ids=None, other_end_token_ids=()
    ):
        """``forced_token_ids``: a forced end sequence other than ``end`` (TB-END-1, profile ``forced_end: phrase``);
        ``other_end_token_ids``: end markers accepted beside ``end`` (TB-END-3, ``end_markers: several``)."""
        return OracleBudget(tb.BudgetBatch(start, end, max_num_reqs, scope, forced_token_ids, other_end_token_ids))

    def rejection_sample(self, case: RejectionCase):
        tokens, num, _ = rs.sample_case(case)
        return tokens, num

    def count_emitted(self, token_ids, vocab_size):
        rows = np.asarray(token_ids).tolist()
        problems = ac.validate_rows(rows, vocab_size)
        holes = {p.row for p in problems if p.kind == "hole"}
        bad = {p.row for p in problems if p.kind == "out_of_vocab"}
        return (
            [ac.num_emitted(r) for r in rows],
            [i in holes for i in range(len(rows))],
            [i in bad for i in range(len(rows))],
        )

    def acceptance_metrics(self, steps, eos_token_ids):
        metrics = ac.AcceptanceMetrics(max_positions=max((k for k, _, _ in steps), default=1))
        for k, row, commit_limit in steps:
            metrics.observe(k, row, eos_token_ids, commit_limit)
        return {
            "acceptance_rate": metrics.acceptance_rate,
            "mean_acceptance_length": metrics.mean_acceptance_length,
            "accepted_per_position": metrics.accepted_per_position,
            "per_position_rates": metrics.per_position_rates(),
        }


class OracleBudget:
    def __init__(self, batch: tb.BudgetBatch):
        self.batch = batch

    def sync_batch(self, update):
        self.batch.apply(update)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return self.batch.forced_rows(num_draft_tokens, draft_token_ids)

    def update_state(self, rows):
        self.batch.commit([list(r) for r in rows])

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        for row, token in enumerate(self.forced_tokens(num_draft_tokens, draft_token_ids)):
            if token != -1:
                logits[row] = -np.inf
                logits[row, token] = 0.0
        return logits
