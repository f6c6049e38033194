"""Every requirement one rejection-sampling output violates, judged against the oracle (RUN-FINDING-1).

``violations(case, tokens, num)`` reads an engine's output for a case and names each way it breaks the spec:

- the shape and the padding (RS-LAYOUT-2: also a tail after a right ``num_emitted`` holding other values than
  -1), ids outside the vocabulary (RS-INPUT-1), a ``num_emitted`` that disagrees with its row (AC-COUNT-5), a
  token with ``p = 0`` (RS-PROB-3), a forced row not emitting its token (RS-FORCE-1), a zero-draft request not
  emitting exactly one token (RS-ZERO-1), and a drafting request emitting no token or more than ``K + 1``
  (RS-LAYOUT-2);
- with ``compare`` (``"greedy"``: the greedy requests only), each request's row against the oracle's (also where
  a token with p = 0 was emitted), at the first position where they part: the rule that decides that position
  (greedy: RS-GREEDY-1 for an acceptance, RS-GREEDY-2 for the emitted correction or bonus token; probabilistic,
  under the reference draws: RS-PROB-1 / RS-ONEHOT-1 for an acceptance, RS-PROB-2 for the residual or bonus
  sample; the one sample of a zero-draft request, a token p allows, RS-RNG-3: only the draws can differ there, and
  ``draws_twins`` are such requests for a sampled request's rows), or the special requirement whose feature that
  position holds: a forced row (RS-FORCE-1), a tie among the row's maxima the engine's token or the draft belongs
  to (RS-GREEDY-3; ``ties_broken`` is the case without it), a draft with ``q(d) = 0`` or ``p(d) = 0`` accepted
  (RS-PROB-3), an empty residual (RS-PROB-4), a zero-draft request (RS-ZERO-1),
  or a misreading the oracle reproduces exactly (the acceptance stream reused, RS-RNG-2; draft probabilities read
  misaligned, RS-ONEHOT-2);
- without ``misread``, no misreading is tried (one that held by chance: see ``checks.rejection.minimal``);
- with ``batch_needed`` (each request alone replays exactly: the failure needs the batch), a request's violation
  is the batch's requirement: RS-LAYOUT-1 where the draft counts differ (ragged rows misread), RS-MIXED-1 where
  the temperatures do (a request verified by another's rule), else RS-ZERO-1 for a zero-draft request (it owns
  exactly its bonus row).

``owner(found)`` is the violation the failure belongs to: of the requirements named, the lowest in the order
(``requirement_order.lowest``), the first in ``sort_key`` order where several are."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import requirement_order
from . import counting as ac
from . import rejection as rs
from . import rng as reference_rng


@dataclass(frozen=True)
class Violation:
    requirement: str
    mode: str
    evidence: str
    request: int = -1  # the request whose row shows it (-1: the whole output)

    @property
    def fingerprint(self) -> str:
        return f"{self.requirement}/{self.mode}"


def owner(found: list[Violation]) -> Violation | None:
    """The violation a failure belongs to: the lowest requirement of ``found`` (RUN-FINDING-1)."""
    if not found:
        return None
    first = requirement_order.lowest(v.requirement for v in found)[0]
    return next(v for v in found if v.requirement == first)


def non_finite_forced_rows(case: rs.RejectionCase) -> list[int]:
    """The forced rows of ``case`` whose logits hold NaN or +inf or no finite value: valid input, since a forced
    row's logits are not read (RS-FORCE-1, RS-INPUT-3)."""
    if case.forced_token_ids is None:
        return []
    logits = case.target_logits
    bad = np.isnan(logits).any(axis=1) | np.isposinf(logits).any(axis=1) | ~np.isfinite(logits).any(axis=1)
    return np.flatnonzero(bad & (np.asarray(case.forced_token_ids) != -1)).tolist()


def rejected(case: rs.RejectionCase, error: Exception) -> Violation:
    """What rejecting the valid ``case`` with ``error`` violates."""
    if rows := non_finite_forced_rows(case):
        return Violation(
            "RS-FORCE-1", "forced-row-logits-read", f"rejected as {error}; forced rows {rows} hold non-finite logits"
        )
    masked = bool(np.isneginf(case.target_logits).any())
    return Violation("RS-INPUT-2" if masked else "RS-INPUT-1", "valid-input-rejected", f"rejected as {error}")


def _forced(case: rs.RejectionCase) -> np.ndarray:
    if case.forced_token_ids is None:
        return np.full(case.target_logits.shape[0], -1)
    return np.asarray(case.forced_token_ids)


def _structure(
    case: rs.RejectionCase, i: int, row: list[int], n: int, num: int, oracle_n: int | None = None
) -> list[Violation]:
    """The ways request ``i``'s row (``n`` tokens before its first placeholder) breaks the output contract
    (``oracle_n``: the oracle's count for it, where the request is compared exactly)."""
    V, K = case.vocab_size, int(case.num_draft_tokens[i])
    tail = row[num:] if 0 < num < n else []
    if tail and -1 not in tail and (oracle_n == num if oracle_n is not None else len(set(tail)) == 1):
        # num_emitted is right (the oracle's count, or the tail one repeated filler): the placeholders are not -1
        evidence = f"request {i}: num_emitted {num}, then {tail} where -1 placeholders belong: {row}"
        return [Violation("RS-LAYOUT-2", "placeholder-not-minus-one", evidence)]
    found = []
    if any(t != -1 for t in row[n:]):
        found.append(Violation("RS-LAYOUT-2", "token-after-placeholder", f"request {i}: real tokens after -1: {row}"))
    if K == 0 and n != 1:
        found.append(Violation("RS-ZERO-1", "zero-draft-count", f"request {i} (K = 0) emitted {n} tokens: {row}"))
    elif K and not 1 <= n <= K + 1:
        found.append(Violation("RS-LAYOUT-2", "emitted-count-out-of-range", f"request {i} emitted {n} with K = {K}"))
    if any(not 0 <= t < V for t in row[:n]):
        found.append(Violation("RS-INPUT-1", "id-outside-vocabulary", f"request {i}: ids outside [0, {V}): {row}"))
    if num != n:
        found.append(Violation("AC-COUNT-5", "num-emitted-differs", f"request {i}: num_emitted {num}, row holds {n}"))
    if found:
        return found
    offset, forced = int(case.row_offsets()[i]), _forced(case)
    for j, t in enumerate(row[:n]):
        r = offset + j
        if forced[r] == -1 and np.isneginf(case.target_logits[r, t]):
            found.append(Violation("RS-PROB-3", "zero-probability-token", f"request {i} position {j}: {t} has p = 0"))
        if forced[r] != -1 and j == n - 1 and t != forced[r]:
            found.append(
                Violation("RS-FORCE-1", "forced-row-ignored", f"request {i} position {j}: forced {forced[r]}, got {t}")
            )
    return found


def _maxima(logits_row: np.ndarray) -> set[int]:
    finite = np.where(np.isneginf(logits_row), -np.inf, logits_row)
    return set(np.flatnonzero(finite == finite.max()).tolist())


def _greedy(case, i: int, j: int, got: list[int], expected: list[int], tie_break: str) -> tuple[str, str]:
    """``(requirement, mode)`` of a greedy request parting from the oracle at position ``j``."""
    K, offset = int(case.num_draft_tokens[i]), int(case.row_offsets()[i])
    drafts = case.draft_token_ids[rs.request_slices(case, i)[1]]
    if j >= len(expected):  # verification went on after the oracle's correction at j - 1
        maxima = _maxima(case.target_logits[offset + j - 1])
        if tie_break == "lowest" and len(maxima) > 1 and int(drafts[j - 1]) in maxima:
            return "RS-GREEDY-3", "tie-not-lowest"
        return "RS-GREEDY-1", "continued-after-mismatch"
    maxima = _maxima(case.target_logits[offset + j])
    tied = tie_break == "lowest" and len(maxima) > 1
    if K == 0:
        if tied and j < len(got) and got[j] in maxima:
            return "RS-GREEDY-3", "tie-not-lowest"
        return "RS-ZERO-1", "zero-draft-token-differs"
    if j >= len(got):
        return "RS-GREEDY-2", "bonus-token-missing" if j == K else "correction-missing"
    # one of the two accepted the draft (a draft emitted last was rejected: the correction equals it)
    if j < K and any(int(drafts[j]) == row[j] and len(row) > j + 1 for row in (got, expected)):
        if tied and int(drafts[j]) in maxima:
            return "RS-GREEDY-3", "tie-not-lowest"
        return "RS-GREEDY-1", "acceptance-differs"
    if tied and got[j] in maxima:
        return "RS-GREEDY-3", "tie-not-lowest"
    return "RS-GREEDY-2", "bonus-token-differs" if j == K else "correction-differs"


def _sampled(case, i: int, j: int, got: list[int], expected: list[int]) -> tuple[str, str]:
    """``(requirement, mode)`` of a probabilistic request parting from the oracle (reference draws) at ``j``."""
    K, offset = int(case.num_draft_tokens[i]), int(case.row_offsets()[i])
    draft_slice = rs.request_slices(case, i)[1]
    drafts = case.draft_token_ids[draft_slice]
    one_hot = case.draft_probs is None
    acceptance = "RS-ONEHOT-1" if one_hot else "RS-PROB-1"
    T = float(case.temperature[i])
    if K == 0:  # one sample of p: a token p allows can differ only by the draws; one it forbids is the rule's
        if j < len(got) and rs.target_probs(case.target_logits[offset], T)[got[j]] == 0:
            return "RS-ZERO-1", "zero-draft-token-differs"
        return "RS-RNG-3", "draws-not-the-reference"
    if j >= len(expected):  # accepted where the oracle rejected at j - 1
        d = int(drafts[j - 1])
        q_d = 1.0 if one_hot else float(case.draft_probs[draft_slice.start + j - 1][d])
        if q_d == 0 or rs.target_probs(case.target_logits[offset + j - 1], T)[d] == 0:
            return "RS-PROB-3", "zero-probability-draft-accepted"
        return acceptance, "continued-after-rejection"
    if j >= len(got):
        return ("RS-PROB-2", "bonus-token-missing") if j == K else (acceptance, "correction-missing")
    if j == K:
        return "RS-PROB-2", "bonus-token-differs"
    d = int(drafts[j])
    p = rs.target_probs(case.target_logits[offset + j], T)
    q = np.zeros(case.vocab_size) if one_hot else np.asarray(case.draft_probs[draft_slice.start + j])
    if one_hot:
        q[d] = 1.0
    if any(d == row[j] and len(row) > j + 1 for row in (got, expected)):  # accepted by one of the two
        if got[j] == d and (q[d] == 0 or p[d] == 0):
            return "RS-PROB-3", "zero-probability-draft-accepted"
        return acceptance, "acceptance-differs"
    if np.maximum(p - q, 0.0).sum() <= 0:
        return "RS-PROB-4", "empty-residual-sample-differs"
    return ("RS-ONEHOT-1" if one_hot else "RS-PROB-2"), "residual-sample-differs"


def oracle_row(case: rs.RejectionCase, i: int, q_rows, noise_purpose: int) -> list[int]:
    """Request ``i``'s oracle row (``-1`` padded) under the reference draws, with ``q_rows`` as its draft
    probabilities and its tokens sampled from the ``noise_purpose`` stream."""
    row_slice, draft_slice = rs.request_slices(case, i)
    position = 0 if case.positions is None else int(case.positions[i])
    draws = rs.counter_draws(int(case.seeds[i]), position, case.vocab_size, noise_purpose)
    emitted = rs.verify_request(
        case.target_logits[row_slice],
        case.draft_token_ids[draft_slice],
        q_rows,
        float(case.temperature[i]),
        _forced(case)[row_slice],
        draws,
    ).emitted
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    return emitted + [-1] * (width - len(emitted))


def misreading(case: rs.RejectionCase, i: int, row: list[int], batch_needed: bool = False) -> Violation | None:
    """The rule a seeded probabilistic request's row breaks when the oracle reproduces it exactly under one
    misreading: its emitted token sampled from the acceptance stream (RS-RNG-2; not where the failure needs the
    batch, as a request's own streams do not), or its draft probabilities read at other rows than its drafts'
    (RS-ONEHOT-2): in the padded layout (``i * max K + j``) or one row off."""
    if case.seed_of(i) is None or case.temperature[i] == 0:
        return None
    _, draft_slice = rs.request_slices(case, i)
    own_q = None if case.draft_probs is None else case.draft_probs[draft_slice]
    if not batch_needed and row == oracle_row(case, i, own_q, reference_rng.PURPOSE_ACCEPT):
        evidence = "the oracle emits this row when the token is sampled from the acceptance stream"
        return Violation("RS-RNG-2", "acceptance-draw-reused", evidence)
    if own_q is None or not case.num_draft_tokens[i]:
        return None
    total, first, K = len(case.draft_probs), draft_slice.start, draft_slice.stop - draft_slice.start
    readings = {
        "padded": [min(i * int(case.num_draft_tokens.max()) + j, total - 1) for j in range(K)],
        "one row early": [max(first + j - 1, 0) for j in range(K)],
        "one row late": [min(first + j + 1, total - 1) for j in range(K)],
    }
    for name, rows in readings.items():
        if rows != list(range(first, first + K)) and row == oracle_row(
            case, i, case.draft_probs[rows], reference_rng.PURPOSE_SAMPLE
        ):
            evidence = f"the oracle emits this row when draft_probs is read {name}"
            return Violation("RS-ONEHOT-2", "draft-probs-misaligned", evidence)
    return None


def ties_broken(case: rs.RejectionCase) -> rs.RejectionCase:
    """``case`` with every greedy row's tie among its maxima broken toward the lowest id (its logit raised by 1):
    the oracle emits the same tokens, so an engine that still parts from it does not need the tie (RS-GREEDY-3)."""
    logits = case.target_logits.copy()
    for i in np.flatnonzero(case.temperature == 0):
        row_slice, _ = rs.request_slices(case, int(i))
        for r in range(row_slice.start, row_slice.stop):
            if len(maxima := _maxima(logits[r])) > 1:
                logits[r, min(maxima)] += 1.0
    return replace(case, target_logits=logits)


def greedy_marked(case: rs.RejectionCase, shift: int = 0) -> rs.RejectionCase:
    """``case`` with every request greedy and every unforced row's argmax its own (row ``r``'s logits raised by 8 at
    id ``(r + shift) mod V``): a batch whose rows are read wrongly parts from the oracle on it, one whose draws depend
    on the batch does not (greedy rows use none). A small vocabulary repeats the marks, and a forced row emits its
    token whatever its mark, so a row read in another's place may meet the same argmax by chance: ``MARKINGS`` shifts
    are tried."""
    logits = case.target_logits.copy()
    logits[~np.isfinite(logits)] = -np.inf  # NaN or +inf would hide the mark: such cases are not probed
    for r in range(len(logits)):
        logits[r, (r + shift) % case.vocab_size] = max(logits[r].max(), 0.0) + 8.0
    return replace(case, target_logits=logits, temperature=np.zeros(case.batch_size))


# the shifts of the marks ``greedy_marked`` tries: a mark that a forced row or a repeat hides under one shows under
# the other
MARKINGS = 2


# a masked logit lifted (``masks_lifted``) this many temperature units (at least 1) below its row's maximum: its
# probability, near e^-30, is no longer zero but leaves every decision of the oracle almost surely as it was
LIFT = 30.0


def masks_lifted(case: rs.RejectionCase) -> rs.RejectionCase | None:
    """``case`` with every ``-inf`` logit of a row that holds a finite one lifted to ``LIFT`` below the row's finite
    maximum (times its request's temperature where above 1), each empty residual first given mass
    (``residual_given_mass``, else the lifted draft would fill it): no token has p = 0 any more (RS-PROB-3) and the
    oracle almost surely emits the same tokens, so an engine that still parts from it does not need the mask; None
    for a case without one. ``target_logits`` keeps its shape ``[sum(K_i + 1), V]`` and dtype."""
    logits = case.target_logits
    masked = np.isneginf(logits)
    if not masked.any():
        return None
    finite_max = np.where(np.isfinite(logits), logits, -np.inf).max(axis=1)
    scale = np.repeat(np.maximum(case.temperature, 1.0), np.asarray(case.num_draft_tokens) + 1)
    lifted = np.where(masked & np.isfinite(finite_max)[:, None], (finite_max - LIFT * scale)[:, None], logits)
    return replace(residual_given_mass(case) or case, target_logits=lifted.astype(logits.dtype))


def residual_given_mass(case: rs.RejectionCase) -> rs.RejectionCase | None:
    """``case`` with each sampled draft row whose residual ``max(p - q, 0)`` is empty and whose draft has q(d) = 0
    (rejected by rule: an empty residual means p = q, under which any other draft is accepted) given half its ``q``
    at the draft instead: still rejected (p(d) = 0), its residual is then ``p / 2``, which the reference draws sample
    as they sample ``p`` (RS-PROB-4), so the oracle emits the same tokens and an engine that still parts from it does
    not need the empty residual; None where no row has one. ``draft_probs`` keeps its shape ``[sum(K_i), V]``."""
    if case.draft_probs is None:
        return None
    q = np.array(case.draft_probs, dtype=np.float64)
    forced, changed = _forced(case), False
    for i in np.flatnonzero(case.temperature > 0):
        row_slice, draft_slice = rs.request_slices(case, int(i))
        for j, r in enumerate(range(draft_slice.start, draft_slice.stop)):
            d, row = int(case.draft_token_ids[r]), row_slice.start + j
            p = rs.target_probs(case.target_logits[row], float(case.temperature[i]), int(forced[row]))
            if q[r, d] == 0 and np.maximum(p - q[r], 0.0).sum() <= 0:
                q[r] *= 0.5
                q[r, d] += 0.5
                changed = True
    return replace(case, draft_probs=q) if changed else None


def one_temperature(case: rs.RejectionCase, i: int) -> rs.RejectionCase:
    """``case`` with every request at request ``i``'s temperature: a batch failure that needs two rules (RS-MIXED-1)
    replays on it."""
    return replace(case, temperature=np.full(case.batch_size, case.temperature[i]))


def finite_forced_rows(case: rs.RejectionCase) -> rs.RejectionCase:
    """``case`` with each forced row that holds NaN, +inf or no finite value replaced by a valid masked row (its
    forced token 0, every other id -inf): an engine that rejects it as it rejected the original rejects -inf (a
    mask, RS-INPUT-2), not a forced row's unread logits (RS-FORCE-1)."""
    logits = case.target_logits.copy()
    forced = _forced(case)
    for r in non_finite_forced_rows(case):
        logits[r] = -np.inf
        logits[r, forced[r]] = 0.0
    return replace(case, target_logits=logits)


def unforced(case: rs.RejectionCase) -> rs.RejectionCase | None:
    """``case`` with each forced row made what forcing makes it (RS-FORCE-1): one-hot logits at its token, no longer
    forced; the oracle emits the same tokens, so an engine that still parts from it does not need forcing (None for a
    case without forced rows)."""
    forced = _forced(case)
    if (forced == -1).all():
        return None
    logits = case.target_logits.copy()
    for r in np.flatnonzero(forced != -1):
        logits[r] = -np.inf
        logits[r, forced[r]] = 0.0
    return replace(case, target_logits=logits, forced_token_ids=None)


def explicit_one_hot(case: rs.RejectionCase) -> rs.RejectionCase | None:
    """A case verified without draft probabilities (one-hot, RS-ONEHOT-1) with them given as the one-hot rows of
    its drafts: the rule of RS-PROB-1 then decides as one-hot verification does, under the same draws (None for a
    case with ``q``)."""
    if case.draft_probs is not None:
        return None
    q = np.zeros((len(case.draft_token_ids), case.vocab_size))
    q[np.arange(len(q)), case.draft_token_ids] = 1.0
    return replace(case, draft_probs=q)


# the rules that decide a sampled position, whose divergence may be the draws' and not theirs
SAMPLED_RULES = ("RS-PROB-1", "RS-PROB-2", "RS-PROB-4", "RS-ONEHOT-1")


def draws_twins(case: rs.RejectionCase, i: int) -> list[rs.RejectionCase]:
    """Seeded sampled request ``i``'s unforced rows, each alone as a request without drafts at the position whose
    draws it uses and ``TWIN_POSITIONS - 1`` later ones, at its temperature and a flatter one (same seed): its one
    token is a sample of ``p`` under the reference draws, so one that parts from the oracle's shows the draws are not
    the reference (RS-RNG-3), whatever the rule does. A row whose p has few tokens agrees with other draws by chance
    often (two tokens at 0.8 and 0.2: two draws in three), hence the several positions."""
    seed = case.seed_of(i)
    if seed is None or case.temperature[i] == 0:
        return []
    row_slice, _ = rs.request_slices(case, i)
    position = 0 if case.positions is None else int(case.positions[i])
    forced = _forced(case)
    return [
        rs.RejectionCase(case.target_logits[r : r + 1], [], [0], [T], seeds=[seed], positions=[p + later])
        for p, r in enumerate(range(row_slice.start, row_slice.stop), start=position)
        if forced[r] == -1
        for T in (float(case.temperature[i]), TWIN_TEMPERATURE)  # a flatter one too: fewer samples agree by chance
        for later in range(0, TWIN_POSITIONS * TWIN_LATER, TWIN_LATER)
    ]


# the twins of a sampled row: also at a high temperature, and at later positions, this far apart (other draws of the
# same seed)
TWIN_TEMPERATURE, TWIN_LATER, TWIN_POSITIONS = 2.0, 1000, 8


def compared(case: rs.RejectionCase, i: int, compare: bool | str = True) -> bool:
    """Whether request ``i`` is compared with the oracle token for token: greedy, or seeded (reference draws)
    unless ``compare`` is ``"greedy"`` (an engine whose draws are its own)."""
    return case.temperature[i] == 0 or (compare != "greedy" and case.seed_of(i) is not None)


# the structural violations of a row of the right shape, whose tokens are still compared with the oracle's
_CONTENT_MODES = ("zero-probability-token", "forced-row-ignored")


# the modes ``_batch`` names
BATCH_MODES = (
    "ragged-rows-misread",
    "request-verified-by-another-rule",
    "zero-draft-row-of-another-request",
    "rows-of-another-request-read",
)


def _batch(case: rs.RejectionCase, i: int) -> tuple[str, str]:
    """The batch requirement request ``i``'s violation breaks where each request alone replays exactly: RS-LAYOUT-1
    where the draft counts differ (the ragged rows misread), RS-MIXED-1 where the temperatures do, else RS-ZERO-1
    for a zero-draft request (it owns exactly its bonus row) and RS-LAYOUT-1 for any other."""
    if len(set(case.num_draft_tokens.tolist())) > 1:
        return "RS-LAYOUT-1", "ragged-rows-misread"
    if len(set(case.temperature.tolist())) > 1:
        return "RS-MIXED-1", "request-verified-by-another-rule"
    if case.num_draft_tokens[i] == 0:
        return "RS-ZERO-1", "zero-draft-row-of-another-request"
    return "RS-LAYOUT-1", "rows-of-another-request-read"


def violations(
    case: rs.RejectionCase,
    tokens,
    num,
    compare: bool | str = True,
    tie_break: str = "lowest",
    batch_needed: bool = False,
    misread: bool = True,
) -> list[Violation]:
    """Every violation of ``(tokens, num)`` as the engine's output for ``case`` (see the module docstring)."""
    tokens, num = np.asarray(tokens), np.asarray(num)
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    if (
        tokens.ndim != 2
        or tokens.shape[0] != case.batch_size
        or tokens.shape[1] < width
        or num.shape != (case.batch_size,)
    ):
        shape = f"token_ids {tokens.shape}, num_emitted {num.shape}; expected ({case.batch_size}, >= {width})"
        return [Violation("RS-LAYOUT-2", "wrong-shape", shape)]
    expected = rs.sample_case(case)[0] if compare else None
    found: list[Violation] = []
    for i in range(case.batch_size):
        row = [int(t) for t in tokens[i]]
        n = ac.num_emitted(row)
        oracle_n = ac.num_emitted(expected[i].tolist()) if compare and compared(case, i, compare) else None
        structural = [replace(v, request=i) for v in _structure(case, i, row, n, int(num[i]), oracle_n)]
        placeholders = any(v.mode == "placeholder-not-minus-one" for v in structural)  # the row's own, at any width
        if structural and batch_needed and case.batch_size > 1 and not placeholders:  # it breaks only in the batch
            rid, mode = _batch(case, i)
            found.append(Violation(rid, mode, f"{structural[0].evidence}; each request alone equals the oracle", i))
            continue
        found += structural
        # a row of the right shape is compared too: a token with p = 0 may be what the rule's error emitted
        shaped = all(v.mode in _CONTENT_MODES for v in structural)
        if not shaped or not compare or not compared(case, i, compare):
            continue
        want = [int(t) for t in expected[i][: ac.num_emitted(expected[i].tolist())]]
        got = row[:n]
        if got == want:
            continue
        j = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        evidence = f"request {i}: emitted {got}, expected {want}"
        explained = misreading(case, i, row[:width], batch_needed) if case.temperature[i] > 0 and misread else None
        if explained:
            found.append(Violation(explained.requirement, explained.mode, f"{evidence}; {explained.evidence}", i))
            continue
        in_batch = _batch(case, i) if batch_needed and case.batch_size > 1 else None  # the request alone replays
        r = int(case.row_offsets()[i]) + (j - 1 if j >= len(want) else j)  # the row that decided position j
        if in_batch:
            rid, mode = in_batch
            evidence += "; each request alone equals the oracle"
        elif _forced(case)[r] != -1:
            rid, mode = "RS-FORCE-1", "forced-row-differs"
        elif case.temperature[i] == 0:
            rid, mode = _greedy(case, i, j, got, want, tie_break)
        else:
            rid, mode = _sampled(case, i, j, got, want)
        # a token with p = 0 emitted where the request parts: an accepted draft is the acceptance rule's failure (the
        # comparison's); any other (a correction or sample p forbids) is the token's own, RS-PROB-3's
        drafts = case.draft_token_ids[rs.request_slices(case, i)[1]]
        zero = [v for v in found if v.request == i and v.mode == "zero-probability-token"]
        accepted = j < len(drafts) and j + 1 < len(got) and got[j] == int(drafts[j])
        if zero and j < len(got) and np.isneginf(case.target_logits[int(case.row_offsets()[i]) + j, got[j]]):
            if not accepted:
                continue
            found = [v for v in found if v not in zero]
        found.append(Violation(rid, mode, f"{evidence} (position {j})", i))
    return found
