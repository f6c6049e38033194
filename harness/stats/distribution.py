"""Calibrated distribution checks (specs/statistics.md): ``distribution_check`` draws drafts from ``q``, runs a
sampler on many independent trials, and tests every position and the accepted-length histogram with a G-test whose
family-wise α is split by Šidák; each test reports a TV upper bound as a certificate.
``distribution_check_on_device`` does the same with the histograms kept on a torch device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .cases import DistributionCase
from .gtest import Judgement, g_test, judge
from .power import DEFAULT_POWER, UNREACHABLE, Power

if TYPE_CHECKING:  # the light install has no torch: it is imported where it is used
    import torch

# A sampler under test: (target_logits [R, V], draft_token_ids [ΣK], num_draft_tokens [B],
# draft_probs [ΣK, V] | None, temperature [B], seeds [B], positions [B]) -> token_ids [B, K+1].
Sampler = Callable[..., np.ndarray]


@dataclass
class DistributionReport:
    case: str
    trials: int
    alpha_test: float
    target: Power
    positions: list[Judgement]  # [K + 1], one G-test per position
    accepted_length: Judgement
    reach: list = field(default_factory=list)  # [K + 1] P(position reached) for a conforming engine
    out_of_range: int = 0  # emitted ids outside [0, V) or rows breaking the prefix invariant
    empirical: list = field(default_factory=list)  # [K + 1][V] observed frequencies per position
    lengths: list = field(default_factory=list)  # observed accepted-length frequencies
    expected_lengths: list = field(default_factory=list)  # their law (RS-PROB-6)

    def violations(self) -> set[str]:
        """Requirement ids this report shows broken (empty when the check passes)."""
        found = set()
        if self.out_of_range:
            found.add("RS-INPUT-1")
        if any(j.failed for j in self.positions):
            found.add("RS-PROB-5")
        if self.accepted_length.failed:
            found.add("RS-PROB-6")
        return found

    @property
    def passed(self) -> bool:
        return not self.violations()

    def position_lines(self) -> list[str]:
        """One line per position and for the accepted length: what it certified, or why it did not count."""
        lines = []
        for j, judgement in enumerate(self.positions):
            if self.reach[j] <= UNREACHABLE and not judgement.result.trials:
                lines.append(f"{self.case} position {j}: unreachable (P = 0 for a conforming engine)")
            else:
                lines.append(judgement.line(f"{self.case} position {j}"))
        lines.append(self.accepted_length.line(f"{self.case} accepted length"))
        return lines


# Requests per sampler call at most: the reference's Triton kernels find a request's first row by summing the
# draft counts before it (impl/kernels/layout.py), so a launch costs about B² / 2048 loads and a batch of
# millions of requests takes minutes where 65,536 take milliseconds.
MAX_BATCH_ROWS = 65_536


def _batch_rows(K: int, V: int, logits: int = 2**24) -> int:
    """Trials per sampler call: about ``logits`` logits, between 1,024 and ``MAX_BATCH_ROWS`` rows."""
    return int(np.clip(logits // ((K + 1) * V), 1024, MAX_BATCH_ROWS))


def draw_drafts(rng: np.random.Generator, q: np.ndarray, count: int) -> np.ndarray:
    """``count`` trials' drafts ``[count, K]`` (int64): column ``j`` drawn from row ``j`` of ``q [K, V]``,
    renormalised (STAT-CASE-1)."""
    V = q.shape[1]
    return np.stack([rng.choice(V, size=count, p=row / row.sum()) for row in q], axis=1).reshape(count, len(q))


def distribution_check(
    sampler: Sampler,
    case: DistributionCase,
    trials: int,
    alpha_test: float,
    seed: int,
    target: Power = DEFAULT_POWER,
    batch: int | None = None,
) -> DistributionReport:
    """Run ``trials`` independent trials of ``case`` and test them (STAT-CASE-1, STAT-TEST-1..4), each
    test judged against ``target`` (STAT-POWER-1, STAT-CERT-1).

    Each trial is one batch row with its own drafts drawn from ``q`` and its own seed; ``batch`` trials go
    to the sampler at once (default: about 16 M logits).
    """
    rng = np.random.default_rng(seed)
    V = case.target_logits.shape[1]
    K = case.K
    counts = np.zeros((K + 1, V))
    lengths = np.zeros(K + 1)
    out_of_range = 0
    done = 0
    batch = batch or _batch_rows(K, V)
    while done < trials:
        b = min(batch, trials - done)
        drafts = draw_drafts(rng, case.q, b)
        logits = np.broadcast_to(case.target_logits, (b, K + 1, V)).reshape(b * (K + 1), V)
        q = None
        if case.pass_q:
            q = np.broadcast_to(case.q, (b, K, V)).reshape(b * K, V)
        tokens = sampler(
            np.ascontiguousarray(logits),
            drafts.reshape(-1),
            np.full(b, K),
            q,
            np.full(b, case.temperature),
            rng.integers(0, 2**62, size=b),
            np.zeros(b, dtype=np.int64),
        )
        tokens = np.asarray(tokens)
        real = tokens != -1
        emitted = real.sum(axis=1)
        prefix = np.arange(K + 1)[None, :] < emitted[:, None]
        bad = (real & ((tokens < 0) | (tokens >= V))).any(axis=1) | (real != prefix).any(axis=1) | (emitted == 0)
        out_of_range += int(bad.sum())
        tokens, emitted = tokens[~bad], emitted[~bad]
        lengths += np.bincount(emitted - 1, minlength=K + 1)
        for j in range(K + 1):
            column = tokens[:, j]
            counts[j] += np.bincount(column[column != -1], minlength=V)
        done += b
    return _report(case, counts, lengths, out_of_range, trials, alpha_test, target)


# A sampler on a torch device: the arguments of ``Sampler`` as tensors on that device -> token_ids [B, K+1].
DeviceSampler = Callable[..., "torch.Tensor"]


def distribution_check_on_device(
    sampler: DeviceSampler,
    case: DistributionCase,
    trials: int,
    alpha_test: float,
    seed: int,
    target: Power = DEFAULT_POWER,
    device: str | torch.device = "cpu",
    batch: int | None = None,
) -> DistributionReport:
    """``distribution_check`` for a sampler that takes and returns torch tensors on ``device``: drafts,
    seeds and histograms stay on the device (``torch.multinomial`` from a generator seeded with ``seed``,
    ``torch.bincount``), and the host reads the histograms once, after the last batch.

    ``batch`` trials go to the sampler at once (default: about 128 M logits on a GPU, 16 M elsewhere)."""
    import torch

    device = torch.device(device)
    generator = torch.Generator(device=device).manual_seed(seed)
    V, K = case.target_logits.shape[1], case.K
    logits = torch.tensor(case.target_logits, dtype=torch.float32, device=device)  # [K + 1, V]
    q = torch.tensor(case.q / case.q.sum(axis=1, keepdims=True), dtype=torch.float32, device=device)  # [K, V]
    counts = torch.zeros((K + 1) * V, dtype=torch.int64, device=device)  # position j, token x at j * V + x
    lengths = torch.zeros(K + 1, dtype=torch.int64, device=device)
    out_of_range = torch.zeros((), dtype=torch.int64, device=device)
    columns = torch.arange(K + 1, device=device)
    batch = batch or _batch_rows(K, V, 2**27 if device.type == "cuda" else 2**24)
    done = 0
    while done < trials:
        b = min(batch, trials - done)
        drafts = (  # [b * K]
            torch.multinomial(q, b, replacement=True, generator=generator).T.reshape(-1)
            if K
            else torch.zeros(0, dtype=torch.int64, device=device)
        )
        tokens = sampler(
            logits.expand(b, K + 1, V).reshape(b * (K + 1), V),
            drafts,
            torch.full((b,), K, dtype=torch.int64, device=device),
            q.expand(b, K, V).reshape(b * K, V) if case.pass_q else None,
            torch.full((b,), case.temperature, dtype=torch.float32, device=device),
            torch.randint(0, 2**62, (b,), generator=generator, device=device),
            torch.zeros(b, dtype=torch.int64, device=device),
        ).to(torch.int64)[:, : K + 1]
        real = tokens != -1
        emitted = real.sum(dim=1)
        prefix = columns[None, :] < emitted[:, None]
        bad = (real & ((tokens < 0) | (tokens >= V))).any(dim=1) | (real != prefix).any(dim=1) | (emitted == 0)
        out_of_range += bad.sum()
        good = real & ~bad[:, None]
        counts += torch.bincount((columns[None, :] * V + tokens)[good], minlength=(K + 1) * V)
        lengths += torch.bincount((emitted - 1)[~bad], minlength=K + 1)
        done += b
    return _report(
        case,
        counts.view(K + 1, V).cpu().numpy().astype(np.float64),
        lengths.cpu().numpy().astype(np.float64),
        int(out_of_range),
        trials,
        alpha_test,
        target,
    )


def _report(case, counts, lengths, out_of_range, trials, alpha_test, target) -> DistributionReport:
    """The tests of ``case`` on its histograms ``counts [K + 1, V]`` and ``lengths [K + 1]`` (float64), each
    judged against ``target``."""
    K = case.K
    p = case.p
    law = case.length_law()
    reach = case.reach()
    report = DistributionReport(
        case.name,
        trials,
        alpha_test,
        target,
        positions=[judge(g_test(counts[j], p[j], alpha_test), p[j], target, float(reach[j])) for j in range(K + 1)],
        accepted_length=judge(g_test(lengths, law, alpha_test), law, target),
        reach=reach.tolist(),
        out_of_range=out_of_range,
    )
    reached = counts.sum(axis=1, keepdims=True)
    report.empirical = np.divide(counts, reached, out=np.zeros_like(counts), where=reached > 0).tolist()
    report.lengths = (lengths / max(lengths.sum(), 1)).tolist()
    report.expected_lengths = law.tolist()
    return report
