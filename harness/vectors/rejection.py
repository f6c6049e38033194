"""The rejection-sampling golden vectors (``specs/vectors/rejection.json``)."""

from __future__ import annotations

import numpy as np

from ..oracle import rejection as rs
from .codec import FORMAT_VERSION, _case_json, _dist_json, encode_float, encode_matrix


def exact_case(name, reqs, case: rs.RejectionCase, description="") -> dict:
    tokens, num, _ = rs.sample_case(case)
    return {
        "name": name,
        "description": description,
        "requirements": reqs,
        "case": _case_json(case),
        "expected_token_ids": tokens.tolist(),
        "expected_num_emitted": num.tolist(),
    }


# A (seed, position) whose acceptance uniform is exactly 0 under the reference draws (RS-RNG-3): found by a search
# over positions for seed 7; such a draw has probability 2**-24 per row.
UNIFORM_ZERO_SEED, UNIFORM_ZERO_POSITION = 7, 10_918_110


def _zero_target_draft_at_uniform_zero() -> dict:
    """A draft whose target probability is exactly 0 (a -inf logit), verified with an acceptance uniform of
    exactly 0: ``u * q(d) < p(d)`` is ``0 < 0``, so the draft is rejected, as RS-PROB-3 demands; a verifier that
    accepts on ``u * q(d) <= p(d)`` emits the masked token."""
    assert rs.rng.uniform(UNIFORM_ZERO_SEED, UNIFORM_ZERO_POSITION) == 0.0
    logits = np.array([[0.3, -np.inf, 0.5, 0.1], [0.2, 0.4, -0.3, 0.0]])
    q = np.array([[0.25, 0.5, 0.25, 0.0]])
    case = rs.RejectionCase(
        logits, [1], [1], [1.0], draft_probs=q, seeds=[UNIFORM_ZERO_SEED], positions=[UNIFORM_ZERO_POSITION]
    )
    _, _, traces = rs.sample_case(case)
    assert traces[0].emitted[0] != 1 and traces[0].sample_margin > 1e-3
    return exact_case(
        "zero-target-draft-at-uniform-zero",
        ["RS-PROB-3", "RS-RNG-3"],
        case,
        "p(d) = 0 and the acceptance uniform is exactly 0: the draft is rejected (0 < 0 fails) and the residual "
        "sampled.",
    )


def _seed_where(make_case, wanted) -> rs.RejectionCase:
    """The first case ``make_case(seed)`` (seed 1, 2, ...) for which ``wanted(case, oracle tokens)`` holds."""
    for seed in range(1, 10_000):
        case = make_case(seed)
        tokens, _, traces = rs.sample_case(case)
        if wanted(case, tokens) and all(t.sample_margin > 1e-3 for t in traces):
            return case
    raise AssertionError("no seed gives the wanted output")


def _isolating_rejection_vectors() -> list[dict]:
    """Exact vectors whose first requirement is the only reading they separate."""
    rng = np.random.default_rng(20261122)
    z = rng.normal(size=(6, 9)).round(3)
    for row, best in enumerate([2, 5, 0, 7, 3, 8]):
        z[row, best] = 4.0
    out = [
        exact_case(
            "ragged-layout",
            ["RS-LAYOUT-1", "RS-GREEDY-1"],
            rs.RejectionCase(z, [2, 7, 3], [1, 0, 2], [0.0, 0.0, 0.0]),
            "K = 1, 0, 2: request 1's only row is row 2, request 2's rows are 3 to 5.",
        )
    ]
    neg = -np.inf
    zero_q = _seed_where(
        lambda seed: rs.RejectionCase(
            np.array([[3.0, 0.0, 0.0], [0.0, 1.0, 2.0]]),
            [0],
            [1],
            [1.0],
            draft_probs=np.array([[0.0, 0.5, 0.5]]),
            seeds=[seed],
            positions=[0],
        ),
        lambda case, tokens: tokens[0, 1] == -1 and rs.rng.uniform(int(case.seeds[0]), 0) < 0.7,
    )
    out.append(
        exact_case(
            "draft-with-zero-q-rejected",
            ["RS-PROB-3", "RS-RNG-3"],
            zero_q,
            "q(d) = 0 rejects the draft although p(d) is 0.9: one token is emitted from the residual.",
        )
    )
    empty = _seed_where(
        lambda seed: rs.RejectionCase(
            np.array([[0.0, 0.0, neg], [0.0, 0.0, 0.0]]),
            [2],
            [1],
            [1.0],
            draft_probs=np.array([[0.5, 0.5, 0.0]]),
            seeds=[seed],
            positions=[0],
        ),
        lambda case, tokens: tokens[0, 0] == 1,
    )
    out.append(
        exact_case(
            "residual-without-mass-samples-p",
            ["RS-PROB-4", "RS-PROB-3", "RS-RNG-3"],
            empty,
            "p = q = (0.5, 0.5, 0) and the draft 2 has q = 0: the residual is empty, so p is sampled (here 1, "
            "not its argmax 0).",
        )
    )
    return out


def rejection_vectors() -> dict:
    rng = np.random.default_rng(20261121)
    NEG = -np.inf
    exact = []

    def logits_with_argmax(rows, V, argmaxes):
        z = rng.normal(size=(rows, V)).round(3)
        for r, a in enumerate(argmaxes):
            z[r, a] = 5.0
        return z

    # Greedy.
    z = logits_with_argmax(4, 11, [3, 7, 2, 9])
    exact.append(
        exact_case(
            "greedy-all-accepted",
            ["RS-GREEDY-1", "RS-GREEDY-2", "RS-LAYOUT-1", "RS-LAYOUT-2"],
            rs.RejectionCase(z, [3, 7, 2], [3], [0.0]),
        )
    )
    exact.append(
        exact_case(
            "greedy-mismatch-at-1",
            ["RS-GREEDY-1", "RS-GREEDY-2"],
            rs.RejectionCase(z, [3, 8, 2], [3], [0.0]),
            "Row 1's argmax is 7, the draft 8: emit 7 and stop; row 2 is never used.",
        )
    )
    tie = np.array([[0.5, 2.0, 2.0, 1.0], [2.0, 0.0, 2.0, 2.0]])
    exact.append(
        exact_case(
            "greedy-tie-lowest-id",
            ["RS-GREEDY-3"],
            rs.RejectionCase(tie, [2], [1], [0.0]),
            "Row 0 ties ids 1 and 2: the argmax is 1, so draft 2 is rejected.",
        )
    )
    z2 = logits_with_argmax(5, 37, [4, 36, 0, 12, 20])
    exact.append(
        exact_case(
            "greedy-zero-draft-rows",
            ["RS-ZERO-1", "RS-LAYOUT-2", "RS-INPUT-1"],
            rs.RejectionCase(z2, [4, 36], [0, 2, 0], [0.0, 0.0, 0.0]),
            "Three requests, K = 0, 2, 0, V = 37 (not a multiple of any block).",
        )
    )
    masked = np.full((3, 9), NEG)
    masked[:, 2] = 0.0
    masked[0, 5] = 1.0
    masked[1, 6] = 0.5
    exact.append(
        exact_case(
            "greedy-neg-inf-mask",
            ["RS-INPUT-2", "RS-GREEDY-1"],
            rs.RejectionCase(masked, [5, 6], [2], [0.0]),
            "-inf entries are a mask, not an error.",
        )
    )
    z3 = logits_with_argmax(4, 13, [1, 2, 3, 4])
    exact.append(
        exact_case(
            "forced-draft-row",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3, [1, 9, 3], [3], [0.0], forced_token_ids=[-1, 6, -1, -1]),
            "Row 1 is forced to 6: the draft 9 is rejected and 6 emitted.",
        )
    )
    exact.append(
        exact_case(
            "forced-row-accepts-equal-draft",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3, [1, 6, 3], [3], [1.0], forced_token_ids=[-1, 6, 12, -1], seeds=[7], positions=[100]),
        )
    )
    exact.append(
        exact_case(
            "forced-bonus-row",
            ["RS-FORCE-1"],
            rs.RejectionCase(z3[:1], [], [0], [0.8], forced_token_ids=[11], seeds=[3], positions=[0]),
        )
    )
    # Probabilistic, exact under the reference draws (RS-RNG-3).
    V = 16
    zp = rng.normal(size=(7, V)).round(3)
    q = rng.dirichlet(np.ones(V), size=4)
    drafts = [int(rng.choice(V, p=q[j])) for j in range(4)]
    exact.append(
        exact_case(
            "probabilistic-seeded-mixed-batch",
            ["RS-RNG-3", "RS-MIXED-1", "RS-PROB-1", "RS-PROB-2"],
            rs.RejectionCase(
                zp,
                drafts,
                [3, 1, 0],
                [0.7, 0.0, 1.3],
                draft_probs=q,
                seeds=[11, 12, 13],
                positions=[5, 40, 7],
            ),
            "Seeded requests under the reference counter-based draws.",
        )
    )
    exact.append(
        exact_case(
            "one-hot-seeded",
            ["RS-RNG-3", "RS-ONEHOT-1"],
            rs.RejectionCase(zp[:5], drafts, [4], [1.0], seeds=[99], positions=[0]),
        )
    )

    exact.append(_zero_target_draft_at_uniform_zero())
    exact += _isolating_rejection_vectors()
    # Exact output distributions for fixed drafts.
    distributions = []

    def dist_entry(name, reqs, p_rows, q_rows, drafts, description=""):
        return {
            "name": name,
            "description": description,
            "requirements": reqs,
            "p": encode_matrix(p_rows),
            "q": None if q_rows is None else encode_matrix(q_rows),
            "drafts": drafts,
            "expected_distribution": _dist_json(rs.output_distribution(p_rows, q_rows, drafts)),
        }

    p = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    qq = np.array([[0.1, 0.6, 0.3, 0.0], [0.4, 0.3, 0.2, 0.1]])
    distributions.append(dist_entry("residual", ["RS-PROB-1", "RS-PROB-2"], p, qq, [1, 0]))
    distributions.append(
        dist_entry(
            "draft-with-zero-target",
            ["RS-PROB-3"],
            np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]]),
            np.array([[0.2, 0.2, 0.6]]),
            [2],
            "p(d) = 0: the draft is never emitted.",
        )
    )
    distributions.append(
        dist_entry(
            "draft-with-zero-q",
            ["RS-PROB-3"],
            np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]]),
            np.array([[0.5, 0.0, 0.5]]),
            [1],
            "q(d) = 0 rejects the draft; the residual is sampled.",
        )
    )
    distributions.append(
        dist_entry(
            "residual-without-mass",
            ["RS-PROB-4"],
            np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]),
            np.array([[0.5, 0.5, 0.0]]),
            [2],
            "q(d) = 0 with p = q elsewhere: the residual is empty, so p is sampled.",
        )
    )
    distributions.append(dist_entry("one-hot", ["RS-ONEHOT-1"], p, None, [0, 3]))
    # Drafts sampled from q: per-position marginals and the accepted-length law.
    sampled = []
    for name, p_rows, q_rows, reqs in (
        (
            "reverse-ranked",
            np.array([[0.5, 0.25, 0.15, 0.1]] * 3),
            np.array([[0.1, 0.15, 0.25, 0.5]] * 2),
            ["RS-PROB-5", "RS-PROB-6"],  # q is what the drafts are drawn from: RS-ONEHOT-2's premise, not judged
        ),
        (
            "disjoint",
            np.array([[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0.25] * 4]),
            np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 0, 0]]),
            ["RS-PROB-5", "RS-PROB-6"],
        ),
        (
            "p-equals-q",
            np.array([[0.4, 0.3, 0.2, 0.1]] * 3),
            np.array([[0.4, 0.3, 0.2, 0.1]] * 2),
            ["RS-PROB-5", "RS-PROB-6"],
        ),
    ):
        dist = rs.distribution_with_sampled_drafts(p_rows, q_rows)
        marginals = [rs.position_marginals(dist, j, p_rows.shape[1])[0] for j in range(len(p_rows))]
        betas = [rs.overlap(p_rows[j], q_rows[j]) for j in range(len(q_rows))]
        lengths = np.zeros(len(q_rows) + 1)
        for key, prob in dist.items():
            lengths[len(key) - 1] += prob
        sampled.append(
            {
                "name": name,
                "requirements": reqs,
                "p": encode_matrix(p_rows),
                "q": encode_matrix(q_rows),
                "expected_position_marginals": encode_matrix(marginals),
                "expected_accepted_length": [encode_float(x) for x in lengths],
                "closed_form_accepted_length": [encode_float(x) for x in rs.accepted_length_distribution(betas)],
            }
        )
    # Invalid input.
    errors = []
    base = rng.normal(size=(3, 6)).round(3)

    def error(name, reqs, field_name, **changes):
        kwargs = dict(
            target_logits=base.copy(),
            draft_token_ids=[1, 2],
            num_draft_tokens=[2],
            temperature=[1.0],
            seeds=[1],
            positions=[0],
        )
        kwargs.update(changes)
        case = rs.RejectionCase(**kwargs)
        return {
            "name": name,
            "requirements": reqs,
            "case": _case_json(case),
            "expected_error_field": field_name,
        }

    nan = base.copy()
    nan[1, 3] = np.nan
    pinf = base.copy()
    pinf[0, 0] = np.inf
    empty = base.copy()
    empty[2, :] = NEG
    errors += [
        error("nan-logit", ["RS-INPUT-3"], "target_logits", target_logits=nan),
        error("pos-inf-logit", ["RS-INPUT-3"], "target_logits", target_logits=pinf),
        error("row-without-finite-logit", ["RS-INPUT-3"], "target_logits", target_logits=empty),
        error(
            "negative-draft-prob",
            ["RS-INPUT-4"],
            "draft_probs",
            draft_probs=np.array([[1.2, -0.2, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]),
        ),
        error(
            "draft-probs-not-normalised",
            ["RS-INPUT-4"],
            "draft_probs",
            draft_probs=np.array([[0.5, 0.4, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]),
        ),
        error("placeholder-draft", ["RS-INPUT-5"], "draft_token_ids", draft_token_ids=[1, -1]),
        error("draft-id-equal-to-V", ["RS-INPUT-5"], "draft_token_ids", draft_token_ids=[6, 1]),
        error("forced-id-equal-to-V", ["RS-INPUT-5"], "forced_token_ids", forced_token_ids=[-1, 6, -1]),
        error("negative-temperature", ["RS-INPUT-5"], "temperature", temperature=[-0.5]),
    ]
    return {
        "format": FORMAT_VERSION,
        "kind": "rejection",
        "exact": exact,
        "distributions": distributions,
        "sampled_drafts": sampled,
        "errors": errors,
    }
