"""The zoo's sampler mutants break one rule each: their base sampler draws each request's randomness from its own
``(seed, position, purpose)`` (RS-RNG-1), and the engine carries the bug into every batch, so a seeded request emits
what it emits alone whatever its batch holds. Otherwise every sampler mutant would also be an RS-RNG-1 defect."""

import numpy as np

from specconform.harness.adapters.zoo import make_mutant, mutant_sampler, sampler
from specconform.harness.oracle import rng
from specconform.specs.interface import RejectionCase


def _batch(num, seed=7, V=5):
    """A seeded batch: ``num`` drafts per request, drafts and ``q`` drawn at random, temperature 0.7."""
    draw = np.random.default_rng(seed)
    rows, drafts = sum(num) + len(num), sum(num)
    q = draw.dirichlet(np.ones(V), size=drafts)
    return RejectionCase(
        draw.normal(size=(rows, V)),
        np.array([draw.choice(V, p=row) for row in q]),
        np.array(num),
        np.full(len(num), 0.7),
        q,
        seeds=draw.integers(0, 2**62, size=len(num)),
        positions=draw.integers(0, 1000, size=len(num)),
    )


def _alone(case, i):
    rows, drafts = case.row_offsets(), case.draft_offsets()
    r, d = slice(rows[i], rows[i + 1]), slice(drafts[i], drafts[i + 1])
    return RejectionCase(
        case.target_logits[r],
        case.draft_token_ids[d],
        case.num_draft_tokens[i : i + 1],
        case.temperature[i : i + 1],
        case.draft_probs[d],
        seeds=case.seeds[i : i + 1],
        positions=case.positions[i : i + 1],
    )


def test_the_base_samplers_draws_are_the_counter_based_draws_of_each_request():
    """The vectorised draws equal the spec's counter-based ones (``oracle.rng``) request by request."""
    seeds, positions = np.array([0, 5, -3, 2**62 + 7]), np.array([0, 3, 11, 2**40])
    u = sampler.uniforms(seeds, positions, 3)
    assert all(u[i, j] == rng.uniform(int(seeds[i]), int(positions[i]) + j) for i in range(4) for j in range(3))
    noise = [rng.exponentials(int(s), int(p), 9) for s, p in zip(seeds, positions)]
    weights = np.random.default_rng(1).random((4, 9))
    expected = [int(np.argmax(weights[i] / noise[i])) for i in range(4)]
    assert sampler.sample_rows(weights, seeds, positions).tolist() == expected


def test_a_seeded_request_emits_what_it_emits_alone_beside_any_batch():
    """RS-RNG-1 for the base sampler (one draft count) and for a mutant engine on a ragged batch."""
    case = _batch([2] * 6)
    sample = mutant_sampler(None)
    args = lambda c: (c.target_logits, c.draft_token_ids, c.num_draft_tokens, c.draft_probs, c.temperature)  # noqa: E731
    together = sample(*args(case), case.seeds, case.positions)
    for i in range(6):
        alone = _alone(case, i)
        assert together[i].tolist() == sample(*args(alone), alone.seeds, alone.positions)[0].tolist()
    ragged = _batch([0, 2, 1, 2, 3, 0], seed=8)
    engine = make_mutant("draft-probs-ignored")
    tokens = np.asarray(engine.rejection_sample(ragged)[0])
    for i in range(6):
        alone = np.asarray(engine.rejection_sample(_alone(ragged, i))[0])[0]
        assert tokens[i, : len(alone)].tolist() == alone.tolist()
