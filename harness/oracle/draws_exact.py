"""Exact judgment of an engine's sampled verification under a named draw scheme (``specconform.harness.oracle.draws``).

The spec's rule (specs/rejection-sampling.md RS-PROB-1..4) decides every draft and every emitted token once the random
draws are known. For a scheme the oracle computes, each seeded, sampled request of a case has one right output:

* draft ``j`` of request ``i`` is accepted iff ``u_j * q(d) < p(d)``, ``u_j`` the scheme's acceptance uniform;
* the first rejected draft's token is the scheme's sample of the residual ``max(p - q, 0)`` (``p`` where it has no
  mass, RS-PROB-4), and after every draft is accepted the bonus token is its sample of the bonus row's ``p``.

The schemes (``SCHEMES``): ``reference`` (``u = uniform(seed, position + j)``, the exponential race of RS-RNG-3),
``vllm-mrv2`` (Triton's Philox at ``position + j``, the murmur3 Gumbel race) and ``sglang-seeded`` (the coin of
column ``j`` of the step's ``(seed, position)``, inverse-CDF sampling with the step's final coin).

An engine computes in float32 with its own roundings, the oracle in float64, so a decision is judged only where its
two sides differ by more than ``tolerance`` relative (RS-RNG-3 skips such cases); a request is judged up to its first
undecidable decision and counted as skipped. Two decisions need no tolerance, whatever ``u``: a draft whose ``p(d)``
or ``q(d)`` is exactly 0 (a ``-inf`` logit, another row's forced token, or ``q(d) = 0``) is rejected (RS-PROB-3),
and a draft with ``p(d) = 1`` exactly (the row's only finite logit, or its forced token) is accepted, since the spec's
``u`` is below 1 (RS-PROB-1). Greedy and unseeded requests are not judged here (the exact greedy checks judge the
first kind).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import rejection as rs
from . import rng
from .draws import sglang_seeded, validate, vllm_mrv2

TOLERANCE = 1e-5
SCHEMES = ("reference", "vllm-mrv2", "sglang-seeded")


def _log_race(scores: np.ndarray) -> tuple[int, float]:
    """The winner of ``scores [V]`` (float64 log-domain, -inf excluded, ties to the lowest id) and its lead over the
    runner-up relative to ``max(1, |best|)``."""
    return vllm_mrv2.argmax_with_gap(scores)


class RequestDraws:
    """One seeded request's draws under ``scheme``: ``uniform(j)`` the acceptance uniform of its draft ``j`` and
    ``sample(j, weights)`` the token its row ``j`` samples from the unnormalised ``weights [V]`` (float64, >= 0),
    with the sample's margin to a decision boundary (relative)."""

    def __init__(self, scheme: str, seed: int, position: int, num_drafts: int, vocab_size: int):
        if validate(scheme, "draws_exact") not in SCHEMES:
            raise ValueError(f"draws_exact: scheme must be one of {', '.join(SCHEMES)}; got {scheme!r}")
        self.scheme, self.seed, self.position, self.vocab_size = scheme, seed, position, vocab_size
        if scheme == "sglang-seeded":
            # _seeded_verify_coins with draft_token_num = K + 1: draft j's coin is column j, the final coin K + 1
            coins, final = sglang_seeded.verify_coins([seed], [position], num_drafts + 1)
            self.coins, self.final_coin = coins[0].astype(np.float64), float(final[0])

    def uniform(self, j: int) -> float:
        if self.scheme == "reference":
            return rng.uniform(self.seed, self.position + j)
        if self.scheme == "vllm-mrv2":
            return float(vllm_mrv2.acceptance_uniform(self.seed, self.position + j))
        return float(self.coins[j])

    def sample(self, j: int, weights: np.ndarray) -> tuple[int, float]:
        with np.errstate(divide="ignore"):
            if self.scheme == "reference":
                noise = rng.exponentials(self.seed, self.position + j, self.vocab_size)
                return _log_race(np.log(weights) - np.log(noise))
            if self.scheme == "vllm-mrv2":
                return vllm_mrv2.gumbel_argmax(np.log(weights), self.seed, self.position + j)
        return sglang_seeded.inverse_cdf(weights, self.final_coin)


@dataclass
class Expected:
    """What the rule and the draws decide for one request: the decided prefix of its emitted tokens, whether that is
    all of them, the acceptance decisions made (``accepted`` of them), the kind of each emitted token (``draft``,
    ``recovered``, ``recovered-from-p`` where the residual was empty, ``bonus``), the exactly decided boundary
    decisions (``p(d)`` or ``q(d)`` 0 or ``p(d)`` 1; ``zero_probability``: the first two) and why the rest is
    undecided (``""``: nothing is)."""

    emitted: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    complete: bool = False
    decisions: int = 0
    accepted: int = 0
    exact_boundaries: int = 0
    zero_probability: int = 0
    skipped: str = ""


def _decide(p_d: float, q_d: float, u: float, tolerance: float) -> tuple[bool | None, bool, str]:
    """``(accepted or None where undecidable, decided without tolerance, why undecidable)`` for one draft."""
    if p_d == 0 or q_d == 0:
        return False, True, ""
    if p_d == 1:
        return True, True, ""
    if abs(p_d - u * q_d) <= tolerance * max(p_d, u * q_d):
        return None, False, f"u q(d) = {u * q_d:.9g} is within tolerance of p(d) = {p_d:.9g}"
    return u * q_d < p_d, False, ""


def expected_request(scheme: str, case: rs.RejectionCase, i: int, tolerance: float = TOLERANCE) -> Expected | None:
    """Request ``i``'s output under ``scheme``'s draws, or None where no draw decides it (greedy or unseeded)."""
    seed, T = case.seed_of(i), float(case.temperature[i])
    if seed is None or T == 0:
        return None
    row_slice, draft_slice = rs.request_slices(case, i)
    logits = case.target_logits[row_slice]
    drafts = case.draft_token_ids[draft_slice]
    q_rows = None if case.draft_probs is None else case.draft_probs[draft_slice]
    forced = np.full(len(logits), -1) if case.forced_token_ids is None else case.forced_token_ids[row_slice]
    position = 0 if case.positions is None else int(case.positions[i])
    draws = RequestDraws(scheme, seed, position, len(drafts), case.vocab_size)
    out = Expected()
    for j in range(len(drafts) + 1):
        p = rs.target_probs(logits[j], T, int(forced[j]))
        if j == len(drafts):
            weights, kind = p, "bonus"
        else:
            d = int(drafts[j])
            q_d = 1.0 if q_rows is None else float(q_rows[j][d])
            accepted, exact, why = _decide(float(p[d]), q_d, draws.uniform(j), tolerance)
            if accepted is None:
                out.skipped = f"draft {j}: {why}"
                return out
            out.decisions += 1
            out.exact_boundaries += exact
            out.zero_probability += p[d] == 0 or q_d == 0
            if accepted:
                out.accepted += 1
                out.emitted.append(d)
                out.kinds.append("draft")
                continue
            q = np.array(q_rows[j], dtype=np.float64) if q_rows is not None else np.zeros(len(p))
            q[d] += q_rows is None  # one-hot at the draft
            weights, kind = np.maximum(p - q, 0.0), "recovered"
            if weights.sum() <= tolerance:
                if weights.sum() > 0:
                    out.skipped = f"recovered token at row {j}: the residual's mass {weights.sum():.1e} is near 0"
                    return out
                weights, kind = p, "recovered-from-p"
        token, margin = draws.sample(j, weights)
        if margin <= tolerance:
            out.skipped = f"{kind} token at row {j}: the sample's margin {margin:.1e} is within tolerance"
            return out
        out.emitted.append(token)
        out.kinds.append(kind)
        out.complete = True
        return out
    raise AssertionError("unreachable: the bonus row ends every request")


@dataclass(frozen=True)
class Mismatch:
    """One request whose output parts from its draws: the requirement its first divergence breaks, a mode and the
    evidence."""

    request: int
    requirement: str
    mode: str
    evidence: str


@dataclass
class Judgment:
    """Counts over a case or many: requests judged, acceptance decisions and tokens compared exactly, decisions on
    an exact boundary (``p(d)`` or ``q(d)`` 0, ``p(d)`` 1), requests cut short within the tolerance of a boundary
    (``skipped``), requests not judged (greedy, unseeded), and the requests whose output differs."""

    scheme: str
    requests: int = 0
    decisions: int = 0
    tokens: int = 0
    exact_boundaries: int = 0
    skipped: int = 0
    not_judged: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    def add(self, other: Judgment) -> None:
        for name in ("requests", "decisions", "tokens", "exact_boundaries", "skipped", "not_judged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.mismatches.extend(other.mismatches)

    @property
    def summary(self) -> str:
        return (
            f"{self.requests} requests judged exactly under the {self.scheme} draws: {self.decisions} acceptance "
            f"decisions ({self.exact_boundaries} on an exact boundary) and {self.tokens} emitted tokens compared, "
            f"{self.skipped} requests cut short within {TOLERANCE:g} (relative) of a decision boundary, "
            f"{self.not_judged} greedy or unseeded requests not judged, {len(self.mismatches)} mismatches"
        )


def _blame(case: rs.RejectionCase, i: int, want: Expected, got: list[int]) -> tuple[str, str, str]:
    """``(requirement, mode, what)`` of request ``i``'s first divergence from ``want``."""
    row_slice, draft_slice = rs.request_slices(case, i)
    drafts = case.draft_token_ids[draft_slice]
    one_hot = case.draft_probs is None
    at = next(
        n for n in range(len(want.emitted) + 1) if n >= len(got) or n >= len(want.emitted) or got[n] != want.emitted[n]
    )
    if at >= len(want.emitted):  # the engine goes on where the draws stop
        return "RS-PROB-1", "emits-past-the-draws", f"token {at} ({got[at]}) after the draws' last"
    kind = want.kinds[at]
    if at >= len(got):  # the engine stops early: it rejected the draft the draws accepted before
        if at > 0 and want.kinds[at - 1] == "draft":
            rid = "RS-ONEHOT-1" if one_hot else "RS-PROB-1"
            return rid, "draft-rejected-against-draws", f"draft {at - 1} ({int(drafts[at - 1])}) rejected"
        return "RS-PROB-2", "emits-too-few-tokens", f"nothing at token {at}"
    if at < len(drafts) and got[at] == int(drafts[at]):  # the engine accepted a draft the draws reject
        q = 1.0 if case.draft_probs is None else float(case.draft_probs[draft_slice][at][int(drafts[at])])
        T = float(case.temperature[i])
        forced = -1 if case.forced_token_ids is None else int(case.forced_token_ids[row_slice][at])
        p = float(rs.target_probs(case.target_logits[row_slice][at], T, forced)[int(drafts[at])])
        if p == 0 or q == 0:
            return (
                "RS-PROB-3",
                "zero-probability-draft-accepted",
                f"draft {at} ({drafts[at]}, p {p:g}, q {q:g}) accepted",
            )
        rid = "RS-ONEHOT-1" if one_hot else "RS-PROB-1"
        return rid, "draft-accepted-against-draws", f"draft {at} ({int(drafts[at])}) accepted"
    if kind == "draft":
        rid = "RS-ONEHOT-1" if one_hot else "RS-PROB-1"
        return rid, "draft-rejected-against-draws", f"draft {at} ({int(drafts[at])}) rejected"
    rid = {"recovered": "RS-ONEHOT-1" if one_hot else "RS-PROB-2", "recovered-from-p": "RS-PROB-4"}.get(
        kind, "RS-PROB-2"
    )
    return rid, f"{kind}-token-differs", f"{kind} token {at} is {got[at]}, the draws sample {want.emitted[at]}"


def judge_case(
    scheme: str, case: rs.RejectionCase, token_ids: np.ndarray, num_emitted: np.ndarray, tolerance: float = TOLERANCE
) -> Judgment:
    """Compare an engine's ``token_ids [B, max K + 1]`` and ``num_emitted [B]`` (int64) for ``case`` with the output
    ``scheme``'s draws decide, request by request, up to each request's first undecidable decision."""
    judgment = Judgment(scheme)
    for i in range(case.batch_size):
        want = expected_request(scheme, case, i, tolerance)
        if want is None:
            judgment.not_judged += 1
            continue
        got = [int(t) for t in np.asarray(token_ids)[i, : int(np.asarray(num_emitted)[i])]]
        judgment.requests += 1
        judgment.decisions += want.decisions
        judgment.exact_boundaries += want.exact_boundaries
        judgment.tokens += len(want.emitted)
        judgment.skipped += not want.complete
        if got[: len(want.emitted)] != want.emitted or (want.complete and len(got) != len(want.emitted)):
            rid, mode, what = _blame(case, i, want, got)
            note = "" if want.complete else f" (then undecided: {want.skipped})"
            evidence = f"request {i}: {what}: emitted {got}, the {scheme} draws decide {want.emitted}{note}"
            judgment.mismatches.append(Mismatch(i, rid, mode, evidence))
    return judgment
