"""The rejection-sampling golden vectors (``specs/vectors/rejection.json``), generated from their sources in
``golden/rejection/``: the oracle adds the tokens of exact cases, the distributions of fixed and sampled drafts;
error vectors are the source's valid base case with one change."""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import RejectionCase

from ..oracle import rejection as rs
from .codec import FORMAT_VERSION, case_json, dist_json, encode_float, encode_matrix
from .schema import (
    DistributionFile,
    DistributionVector,
    ExactFile,
    ExactVector,
    Premise,
    RejectionErrorFile,
    SampledDraftsFile,
    SampledDraftsVector,
    SeedSearch,
    read,
)

MIN_SAMPLE_MARGIN = 1e-3  # a sample this far from a tie stays put under any faithful float arithmetic


def rejection_vectors() -> dict:
    return {
        "format": FORMAT_VERSION,
        "kind": "rejection",
        "exact": [_exact(v) for v in read("rejection", "exact", ExactFile).vectors],
        "distributions": [_distribution(v) for v in read("rejection", "distributions", DistributionFile).vectors],
        "sampled_drafts": [_sampled(v) for v in read("rejection", "sampled_drafts", SampledDraftsFile).vectors],
        "errors": _errors(read("rejection", "errors", RejectionErrorFile)),
    }


def exact_case(name, reqs, case: RejectionCase, description="") -> dict:
    tokens, num, _ = rs.sample_case(case)
    return {
        "name": name,
        "description": description,
        "requirements": reqs,
        "case": case_json(case),
        "expected_token_ids": tokens.tolist(),
        "expected_num_emitted": num.tolist(),
    }


def _exact(source: ExactVector) -> dict:
    if source.seed_search is None:
        case = source.case.rejection_case()
    else:
        case = _seed_where(source, source.seed_search)
    if source.premise is not None:
        _assert_premise(source.name, case, source.premise)
    return exact_case(source.name, source.requirements, case, source.description)


def _seed_where(source: ExactVector, search: SeedSearch) -> RejectionCase:
    """The case under the first seed (1, 2, ...) that gives the output ``search`` wants."""
    for seed in range(1, 10_000):
        case = source.case.rejection_case(seeds=[seed])
        tokens, _, traces = rs.sample_case(case)
        uniform = rs.rng.uniform(seed, 0 if case.positions is None else int(case.positions[0]))  # the oracle's 0
        if (
            tokens[search.row, search.column] == search.token
            and (search.uniform_below is None or uniform < search.uniform_below)
            and all(t.sample_margin > MIN_SAMPLE_MARGIN for t in traces)
        ):
            return case
    raise ValueError(f"golden vector {source.name!r}: no seed gives the wanted output")


def _assert_premise(name: str, case: RejectionCase, premise: Premise) -> None:
    if premise.acceptance_uniform is not None:
        seed = case.seed_of(0)
        if seed is None:
            raise ValueError(f"golden vector {name!r}: an acceptance uniform needs a seeded request")
        uniform = rs.rng.uniform(seed, 0 if case.positions is None else int(case.positions[0]))
        if uniform != premise.acceptance_uniform:
            raise ValueError(f"golden vector {name!r}: the acceptance uniform is {uniform}")
    if premise.draft_rejected:
        _, _, traces = rs.sample_case(case)
        if traces[0].emitted[0] == case.draft_token_ids[0] or traces[0].sample_margin <= MIN_SAMPLE_MARGIN:
            raise ValueError(f"golden vector {name!r}: the first draft is not rejected by a clear margin")


def _distribution(source: DistributionVector) -> dict:
    p = np.array(source.p)
    q = None if source.q is None else np.array(source.q)
    return {
        "name": source.name,
        "description": source.description,
        "requirements": source.requirements,
        "p": encode_matrix(p),
        "q": None if q is None else encode_matrix(q),
        "drafts": source.drafts,
        "expected_distribution": dist_json(rs.output_distribution(p, q, source.drafts)),
    }


def _sampled(source: SampledDraftsVector) -> dict:
    p, q = np.array(source.p), np.array(source.q)
    dist = rs.distribution_with_sampled_drafts(p, q)
    marginals = [rs.position_marginals(dist, j, p.shape[1])[0] for j in range(len(p))]
    betas = [rs.overlap(p[j], q[j]) for j in range(len(q))]
    lengths = np.zeros(len(q) + 1)
    for key, prob in dist.items():
        lengths[len(key) - 1] += prob
    return {
        "name": source.name,
        "requirements": source.requirements,
        "p": encode_matrix(p),
        "q": encode_matrix(q),
        "expected_position_marginals": encode_matrix(marginals),
        "expected_accepted_length": [encode_float(x) for x in lengths],
        "closed_form_accepted_length": [encode_float(x) for x in rs.accepted_length_distribution(betas)],
    }


def _errors(source: RejectionErrorFile) -> list[dict]:
    out = []
    for vector in source.vectors:
        logits = np.array(source.base.target_logits)
        for edit in vector.set_logits:
            logits[edit.row, slice(None) if edit.column is None else edit.column] = edit.value
        replace = {"target_logits": logits, **vector.replace.model_dump(exclude_unset=True)}
        case = source.base.rejection_case(**replace)
        out.append(
            {
                "name": vector.name,
                "requirements": vector.requirements,
                "case": case_json(case),
                "expected_error_field": vector.expected_error_field,
            }
        )
    return out
