"""Exact judgment of vLLM Model Runner V2's sampled verification under its own draws (scheme ``vllm-mrv2``).

The spec's rule (specs/rejection-sampling.md RS-PROB-1..4) decides every draft and every emitted token once the
random draws are known; ``specconform.harness.oracle.draws.vllm_mrv2`` computes vLLM's draws, so each seeded,
sampled request of a case has one right output, token for token:

* draft ``j`` of request ``i`` (``K_i`` drafts) is accepted iff ``u * q(d) < p(d)``, ``u`` vLLM's acceptance uniform
  at the request's seed and the draft row's position ``positions[i] + j`` (``_rejection_kernel``: its log form
  ``log p > log u + log q``);
* the first rejected draft's token is the Gumbel argmax over the residual ``max(p - q, 0)`` (``p`` where it has no
  mass, RS-PROB-4), and after ``K_i`` accepted drafts the bonus token is the Gumbel argmax over ``p``, both with
  vLLM's noise at the request's seed and that row's position (``_resample_kernel``).

vLLM computes in float32 with logarithms that are not correctly rounded, the oracle in float64; a decision is judged
only where its two sides differ by more than ``tolerance`` relative (RS-RNG-3 allows skipping such cases), and a
request is judged up to its first undecidable decision, which is counted as skipped. Greedy and unseeded requests
are not judged here (no draws decide them; the exact greedy checks judge the first kind).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import rejection as rs
from .draws import vllm_mrv2

TOLERANCE = 1e-5


@dataclass
class Expected:
    """What the rule and vLLM's draws decide for one request: the decided prefix of its emitted tokens, whether that
    is all of them, the acceptance decisions made, and why the rest is undecided (``""``: nothing is)."""

    emitted: list[int] = field(default_factory=list)
    complete: bool = False
    decisions: int = 0
    skipped: str = ""


@dataclass
class Judgment:
    """Counts over a case or many: requests judged, acceptance decisions and tokens compared exactly, requests cut
    short within the tolerance of a boundary (``skipped``), requests not judged (greedy, unseeded), and one line per
    request whose output differs."""

    requests: int = 0
    decisions: int = 0
    tokens: int = 0
    skipped: int = 0
    not_judged: int = 0
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: Judgment) -> None:
        for name in ("requests", "decisions", "tokens", "skipped", "not_judged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.mismatches.extend(other.mismatches)

    @property
    def summary(self) -> str:
        return (
            f"{self.requests} requests judged exactly under the vllm-mrv2 draws: {self.decisions} acceptance decisions "
            f"and {self.tokens} emitted tokens compared, {self.skipped} requests cut short within {TOLERANCE:g} "
            f"(relative) of a decision boundary, {self.not_judged} greedy or unseeded requests not judged, "
            f"{len(self.mismatches)} mismatches"
        )


def _race(log_weights: np.ndarray, seed: int, pos: int, tolerance: float, what: str) -> tuple[int | None, str]:
    token, gap = vllm_mrv2.gumbel_argmax(log_weights, seed, pos)
    return (token, "") if gap > tolerance else (None, f"{what}: the Gumbel race's lead {gap:.1e} is within tolerance")


def expected_request(case: rs.RejectionCase, i: int, tolerance: float = TOLERANCE) -> Expected | None:
    """Request ``i``'s output under vLLM's draws, or None where no draw decides it (greedy or unseeded)."""
    seed, T = case.seed_of(i), float(case.temperature[i])
    if seed is None or T == 0:
        return None
    row_slice, draft_slice = rs.request_slices(case, i)
    logits = case.target_logits[row_slice]
    drafts = case.draft_token_ids[draft_slice]
    q_rows = None if case.draft_probs is None else case.draft_probs[draft_slice]
    forced = np.full(len(logits), -1) if case.forced_token_ids is None else case.forced_token_ids[row_slice]
    pos0 = 0 if case.positions is None else int(case.positions[i])
    out = Expected()
    for j in range(len(drafts) + 1):
        p = rs.target_probs(logits[j], T, int(forced[j]))
        if j == len(drafts):
            with np.errstate(divide="ignore"):
                token, out.skipped = _race(np.log(p), seed, pos0 + j, tolerance, f"bonus row {j}")
            break
        d = int(drafts[j])
        q_d = 1.0 if q_rows is None else float(q_rows[j][d])
        u = float(vllm_mrv2.acceptance_uniform(seed, pos0 + j))
        if q_d > 0 and abs(p[d] - u * q_d) <= tolerance * max(p[d], u * q_d):
            out.skipped = f"draft {j}: u q(d) = {u * q_d:.9g} is within tolerance of p(d) = {p[d]:.9g}"
            return out
        out.decisions += 1
        if q_d > 0 and u * q_d < p[d]:
            out.emitted.append(d)
            continue
        q = np.eye(len(p))[d] if q_rows is None else np.asarray(q_rows[j], dtype=np.float64)
        residual = np.maximum(p - q, 0.0)
        with np.errstate(divide="ignore"):
            log_residual = np.log(residual if residual.sum() > 0 else p)
        token, out.skipped = _race(log_residual, seed, pos0 + j, tolerance, f"recovered token at row {j}")
        break
    if token is not None:
        out.emitted.append(token)
        out.complete = True
    return out


def judge_case(
    case: rs.RejectionCase, token_ids: np.ndarray, num_emitted: np.ndarray, tolerance: float = TOLERANCE
) -> Judgment:
    """Compare an engine's ``token_ids [B, max K + 1]`` and ``num_emitted [B]`` for ``case`` with the output vLLM's
    draws decide, request by request, up to each request's first undecidable decision."""
    judgment = Judgment()
    for i in range(case.batch_size):
        want = expected_request(case, i, tolerance)
        if want is None:
            judgment.not_judged += 1
            continue
        got = [int(t) for t in token_ids[i, : int(num_emitted[i])]]
        judgment.requests += 1
        judgment.decisions += want.decisions
        judgment.tokens += len(want.emitted)
        judgment.skipped += not want.complete
        if got[: len(want.emitted)] != want.emitted or (want.complete and len(got) != len(want.emitted)):
            note = "" if want.complete else f" (then undecided: {want.skipped})"
            judgment.mismatches.append(f"request {i}: emitted {got}, the vllm-mrv2 draws decide {want.emitted}{note}")
    return judgment
