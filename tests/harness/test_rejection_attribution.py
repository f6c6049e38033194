"""One bug, one finding, under the requirement it breaks (RUN-FINDING-1), for rejection sampling and counting.

The violation function (``oracle.rejection_judge``) is judged against cases computed by hand from
specs/rejection-sampling.md; an adapter a user would write (docs/engines.md) that wraps the reference and drops
the bonus token is judged through the runner and gets exactly one finding, RS-ZERO-1."""

import json
from dataclasses import replace

import numpy as np
import pytest

from specconform.harness import checks, findings, runner, spec, vectors
from specconform.harness.adapters import zoo
from specconform.harness.checks.rejection import minimal as rejection_minimal
from specconform.harness.checks.rejection.minimal import comparable
from specconform.harness.config import select
from specconform.harness.core import Context
from specconform.harness.isolation import EngineProcess
from specconform.harness.oracle import counting as ac
from specconform.harness.oracle import rejection as rs
from specconform.harness.oracle import rejection_judge as rj
from specconform.harness.oracle import rng as reference_rng

NEG = -np.inf


def _names(found):
    return [(v.requirement, v.mode) for v in found]


def _greedy(rows, drafts, K, forced=None, temperature=None):
    return rs.RejectionCase(
        np.array(rows, dtype=np.float64), drafts, K, temperature or [0.0] * len(K), forced_token_ids=forced
    )


# one request, one draft: row 0's argmax is 1, the bonus row's is 0
ONE_DRAFT = [[0.0, 3.0, 1.0], [2.0, 0.0, 0.0]]


def test_a_zero_draft_request_without_its_token_breaks_rs_zero_1():
    case = _greedy([[0.0, 2.0, 1.0]], [], [0])
    assert _names(rj.violations(case, [[-1]], [0])) == [("RS-ZERO-1", "zero-draft-count")]
    assert rj.violations(case, [[1]], [1]) == []  # the argmax of its one row
    assert _names(rj.violations(case, [[2]], [1])) == [("RS-ZERO-1", "zero-draft-token-differs")]


def test_greedy_acceptance_and_emitted_tokens():
    accepted = _greedy(ONE_DRAFT, [1], [1])  # the draft equals the argmax: accepted, then the bonus argmax 0
    assert rj.violations(accepted, [[1, 0]], [2]) == []
    assert _names(rj.violations(accepted, [[1, -1]], [1])) == [("RS-GREEDY-2", "bonus-token-missing")]
    assert _names(rj.violations(accepted, [[1, 2]], [2])) == [("RS-GREEDY-2", "bonus-token-differs")]
    assert _names(rj.violations(accepted, [[0, -1]], [1])) == [("RS-GREEDY-1", "acceptance-differs")]
    rejected = _greedy(ONE_DRAFT, [2], [1])  # the draft is not the argmax: rejected, the correction is 1
    assert rj.violations(rejected, [[1, -1]], [1]) == []
    assert _names(rj.violations(rejected, [[2, 0]], [2])) == [("RS-GREEDY-1", "acceptance-differs")]
    assert _names(rj.violations(rejected, [[0, -1]], [1])) == [("RS-GREEDY-2", "correction-differs")]
    assert _names(rj.violations(rejected, [[1, 0]], [2])) == [("RS-GREEDY-1", "continued-after-mismatch")]


def test_ties_are_rs_greedy_3_only_where_the_row_holds_one():
    tied = _greedy([[2.0, 2.0, 0.0]], [], [0])  # ids 0 and 1 tie: the lowest, 0, is emitted
    assert _names(rj.violations(tied, [[1]], [1])) == [("RS-GREEDY-3", "tie-not-lowest")]
    assert _names(rj.violations(tied, [[2]], [1])) == [("RS-ZERO-1", "zero-draft-token-differs")]
    assert rj.violations(tied, [[1]], [1], tie_break="any")[0].requirement == "RS-ZERO-1"


def test_rs_force_1_only_where_the_row_is_forced():
    unforced = _greedy(ONE_DRAFT, [1], [1], forced=[-1, -1])
    assert _names(rj.violations(unforced, [[1, -1]], [1])) == [("RS-GREEDY-2", "bonus-token-missing")]
    forced_bonus = _greedy(ONE_DRAFT, [1], [1], forced=[-1, 2])  # the bonus row is forced to 2
    assert rj.violations(forced_bonus, [[1, 2]], [2]) == []
    assert ("RS-FORCE-1", "forced-row-ignored") in _names(rj.violations(forced_bonus, [[1, 0]], [2]))


def test_the_output_contract():
    case = _greedy(ONE_DRAFT, [2], [1])
    assert _names(rj.violations(case, [[1]], [1])) == [("RS-LAYOUT-2", "wrong-shape")]  # narrower than K + 1
    assert _names(rj.violations(case, [[3, -1]], [1])) == [("RS-INPUT-1", "id-outside-vocabulary")]
    assert _names(rj.violations(case, [[1, -1]], [2])) == [("AC-COUNT-5", "num-emitted-differs")]
    assert _names(rj.violations(case, [[-1, 1]], [1]))[0] == ("RS-LAYOUT-2", "token-after-placeholder")
    masked = _greedy([[0.0, 1.0, NEG]], [], [0])
    # a token with p = 0 is never emitted, whatever else the row shows
    assert ("RS-PROB-3", "zero-probability-token") in _names(rj.violations(masked, [[2]], [1], compare=False))


def test_placeholders_written_as_another_value_break_rs_layout_2():
    case = _greedy(ONE_DRAFT, [2], [1])  # rejected: the oracle emits [1], then a placeholder
    assert _names(rj.violations(case, [[1, 0]], [1])) == [("RS-LAYOUT-2", "placeholder-not-minus-one")]
    # a count that says two where the row holds one real token is the count's, not the placeholders'
    assert _names(rj.violations(case, [[1, -1]], [2])) == [("AC-COUNT-5", "num-emitted-differs")]
    # not compared (no oracle count): a tail of one repeated value is read as placeholders written wrongly
    assert _names(rj.violations(case, [[1, 0]], [1], compare=False)) == [("RS-LAYOUT-2", "placeholder-not-minus-one")]


def test_a_zero_draft_sample_that_parts_from_the_oracle_is_the_draws():
    # one seeded sampled request without drafts: its one token is a sample of p; another token p allows can only
    # come from other draws (RS-RNG-3), one p forbids is RS-PROB-3's
    case = rs.RejectionCase(np.array([[0.0, 0.0, 0.0, 0.0, NEG]]), [], [0], [1.0], seeds=[3], positions=[0])
    want = int(rs.sample_case(case)[0][0, 0])
    from_acceptance_stream = rj.oracle_row(case, 0, None, reference_rng.PURPOSE_ACCEPT)[0]
    other = next(t for t in range(4) if t not in (want, from_acceptance_stream))
    assert rj.violations(case, [[want]], [1]) == []
    assert _names(rj.violations(case, [[other]], [1])) == [("RS-RNG-3", "draws-not-the-reference")]
    if from_acceptance_stream != want:  # the token the acceptance stream samples is that misreading (RS-RNG-2)
        assert _names(rj.violations(case, [[from_acceptance_stream]], [1])) == [("RS-RNG-2", "acceptance-draw-reused")]
    assert _names(rj.violations(case, [[4]], [1])) == [("RS-PROB-3", "zero-probability-token")]  # p forbids it
    # the twins of a sampled request: each unforced row alone, without drafts, at the position whose draws it uses
    drafted = rs.RejectionCase(
        np.zeros((3, 4)), [1, 2], [2], [0.8], seeds=[5], positions=[10], forced_token_ids=[-1, 3, -1]
    )
    twins = rj.draws_twins(drafted, 0)
    later, flat = rj.TWIN_LATER, rj.TWIN_TEMPERATURE
    assert [(int(t.positions[0]), float(t.temperature[0]), t.target_logits.shape, t.seed_of(0)) for t in twins] == [
        (q, T, (1, 4), 5) for p in (10, 12) for T in (0.8, flat) for q in range(p, p + rj.TWIN_POSITIONS * later, later)
    ]
    assert rj.draws_twins(_greedy(ONE_DRAFT, [1], [1]), 0) == []  # greedy: no draws


def test_a_tie_broken_away_and_greedy_only_comparison():
    tied = _greedy([[2.0, 2.0, 0.0], [0.0, 1.0, 0.0]], [1], [1])  # ids 0 and 1 tie; the draft 1 is rejected
    untied = rj.ties_broken(tied)
    assert rs.sample_case(untied)[0].tolist() == rs.sample_case(tied)[0].tolist()  # the oracle emits the same
    assert untied.target_logits[0].tolist() == [3.0, 2.0, 0.0] and untied.target_logits[1].tolist() == [0.0, 1.0, 0.0]
    # an accepted non-argmax draft that is masked: the greedy rule's (RS-GREEDY-1), not only a token with p = 0
    masked = _greedy([[0.0, NEG, 1.0], [1.0, 0.0, 0.0]], [1], [1])
    assert rj.owner(rj.violations(masked, [[1, 0]], [2])).requirement == "RS-GREEDY-1"
    # "greedy": a seeded sampled request is not compared (the engine's draws are its own), a greedy one is
    mixed = rs.RejectionCase(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), [], [0, 0], [0.0, 1.0], seeds=[1, 2])
    expected = rs.sample_case(mixed)[0][1, 0]
    other = [t for t in (0, 1) if t != expected][0]
    assert rj.violations(mixed, [[2], [other]], [1, 1], compare="greedy") == []
    assert _names(rj.violations(mixed, [[0], [other]], [1, 1], compare="greedy")) == [
        ("RS-ZERO-1", "zero-draft-token-differs")
    ]


def test_count_rows_go_to_the_lowest_requirement_their_minimal_row_violates():
    from specconform.harness.checks import counting

    assert counting.row_violations([5, -1], 10, (1, False, False)) == []
    assert counting.row_violations([5, -1], 10, (2, False, False))[0][:2] == ("AC-COUNT-1", "count-differs")
    assert counting.row_violations([-1, -1], 10, (1, False, False))[0][:2] == ("AC-COUNT-4", "count-differs")
    assert [v[:2] for v in counting.row_violations([5, -1, 7], 10, (2, False, False))] == [
        ("AC-COUNT-2", "count-differs"),
        ("AC-COUNT-2", "broken-prefix-misreported"),
    ]
    assert counting.row_violations([11], 10, (1, False, False))[0][:2] == ("AC-COUNT-3", "bad-id-misreported")

    class CountsFirstPlaceholder:  # the count includes the first placeholder of a row that emitted something
        def count_emitted(self, token_ids, vocab_size):
            rows = np.asarray(token_ids).tolist()
            num = [min(ac.num_emitted(r) + 1, len(r)) if ac.num_emitted(r) else 0 for r in rows]
            problems = {(p.row, p.kind) for p in ac.validate_rows(rows, vocab_size)}
            return (
                num,
                [(i, "hole") in problems for i in range(len(rows))],
                [(i, "out_of_vocab") in problems for i in range(len(rows))],
            )

    # a row with a hole fails as a hole row, but its minimal row has none: the count rule's (AC-COUNT-1)
    rid, mode, evidence = counting.attribute_row(CountsFirstPlaceholder(), [5, -1, 7, -1], 10)
    assert (rid, mode) == ("AC-COUNT-1", "count-differs")
    assert "minimised to" in evidence


def test_the_owner_is_the_lowest_requirement_violated():
    case = _greedy([[0.0, 2.0, 1.0]], [], [0])
    found = rj.violations(case, [[-1]], [1])  # no token, and a count that says one
    assert {v.requirement for v in found} == {"RS-ZERO-1", "AC-COUNT-5"}
    assert rj.owner(found).requirement == "RS-ZERO-1"  # AC-COUNT-5 is of a higher level
    assert rj.owner([]) is None


def test_a_draft_with_zero_q_accepted_breaks_rs_prob_3():
    # p of row 0 is all on id 0 and q(0) = 0: the draft 0 is rejected (RS-PROB-3) and the residual emits 0; whatever
    # the draws, the oracle emits [0]; the bonus row puts all of p on id 1
    case = rs.RejectionCase(
        np.array([[0.0, NEG, NEG], [NEG, 0.0, NEG]]), [0], [1], [1.0], np.array([[0.0, 1.0, 0.0]]), seeds=[7]
    )
    assert rj.violations(case, [[0, -1]], [1]) == []
    assert _names(rj.violations(case, [[0, 1]], [2])) == [("RS-PROB-3", "zero-probability-draft-accepted")]


def test_a_failure_that_needs_the_batch_is_the_batch_requirement():
    rows = ONE_DRAFT + [[0.0, 0.0, 5.0]]  # request 0 as ONE_DRAFT (emits [1, 0]), request 1 without drafts (2)
    ragged = _greedy(rows, [1], [1, 0])
    assert _names(rj.violations(ragged, [[1, 2], [2, -1]], [2, 1], batch_needed=True)) == [
        ("RS-LAYOUT-1", "ragged-rows-misread")
    ]
    # without the batch shown to be needed, the request's own rule
    assert _names(rj.violations(ragged, [[1, 2], [2, -1]], [2, 1])) == [("RS-GREEDY-2", "bonus-token-differs")]
    # two zero-draft requests: argmax 2, then argmax 1
    two = [[0.0, 0.0, 5.0], [0.0, 2.0, 0.0]]
    same_rule = _greedy(two, [], [0, 0])
    assert _names(rj.violations(same_rule, [[2], [2]], [1, 1], batch_needed=True)) == [
        ("RS-ZERO-1", "zero-draft-row-of-another-request")
    ]
    mixed = rs.RejectionCase(np.array(two), [], [0, 0], [0.0, 0.7], seeds=[1, 2])
    found = rj.violations(mixed, [[1], [1]], [1, 1], batch_needed=True)
    assert ("RS-MIXED-1", "request-verified-by-another-rule") in _names(found)
    assert rj.owner(found).requirement == "RS-MIXED-1"


def test_greedy_marked_gives_every_row_its_own_argmax():
    # the draws probe of a batch failure: rows read from another request part from the oracle even where the rows'
    # own argmaxes agree (here both rows' argmax is 0), so the probe tells a misreading from batch-dependent draws
    case = rs.RejectionCase(np.array([[2.0, NEG, 1.0], [2.7, NEG, 2.6]]), [], [0, 0], [1.0, 1.0], seeds=[1, 2])
    marked = rj.greedy_marked(case)
    assert (marked.temperature == 0).all()
    assert rs.sample_case(marked)[0][:, 0].tolist() == [0, 1]  # row r's argmax is r mod V


def test_rows_read_in_a_padded_layout_are_rs_layout_1_where_one_marking_hides_them():
    # three sampled requests (a minimal case of rejection/output-contract), K = [0, 1, 0], V = 2, forced rows 1 and 3;
    # an engine that reads request 1's rows as if
    # every request had max K drafts (rows 2 and 3) parts only in the batch. Greedy with row r's argmax r mod 2, the
    # misread rows emit what its own do (the forced row 1 emits 0 whatever its mark); shifted by one, they part: its
    # rows are read wrongly (RS-LAYOUT-1), not its draws taken from the batch (RS-RNG-1)
    case = rs.RejectionCase(
        np.array([[1.154, 0.949], [-3.753, -1.132], [-0.984, 2.052], [0.607, -0.321]]),
        [1],
        [0, 1, 0],
        [0.5, 0.5, 0.5],
        np.array([[0.0, 1.0]]),
        forced_token_ids=[-1, 0, -1, 0],
        seeds=[4445895645207423701, 4409757157412747137, 4243121552447682306],
        positions=[979273957681, 604682601183, 974705377497],
    )
    engine = zoo.make_mutant("padded-row-reading")
    assert (
        rs.sample_case(rj.greedy_marked(case))[0].tolist()
        == engine.rejection_sample(rj.greedy_marked(case))[0].tolist()
    )
    shifted = rj.greedy_marked(case, 1)
    assert rs.sample_case(shifted)[0].tolist() != engine.rejection_sample(shifted)[0].tolist()
    assert rj.violations(case, *engine.rejection_sample(case))  # the draws of these seeds show the misreading
    attributed = rejection_minimal.attribute(engine, engine.profile, case, True, "lowest", lambda c: True)
    assert attributed.owner.requirement == "RS-LAYOUT-1"


def test_draws_of_another_seed_on_a_row_of_two_tokens_are_rs_rng_3():
    # a minimal case of rejection/reference-draws: p of row 0 holds two tokens (0.8, 0.2), of row 1 one at 0.99;
    # an engine whose draws are keyed by another seed accepted the draft where the oracle rejected it. Its rows alone
    # without drafts agree with the reference draws by chance at a few positions, not at all of TWIN_POSITIONS
    case = rs.RejectionCase(
        np.array([[3.016, NEG, 1.619], [0.239, 5.158, NEG]]),
        [0],
        [1],
        [1.0],
        np.array([[1.0, 0.0, 0.0]]),
        seeds=[2578500160942333167],
        positions=[594249614314],
    )
    engine = zoo.make_mutant("draws-not-the-reference")
    assert rj.owner(rj.violations(case, *engine.rejection_sample(case))).requirement == "RS-PROB-1"
    attributed = rejection_minimal.attribute(engine, engine.profile, case, True, "lowest", lambda c: True)
    assert attributed.owner.requirement == "RS-RNG-3"


def _vector_case(name: str) -> rs.RejectionCase:
    entry = next(e for e in spec.load_vectors("rejection")["exact"] if e["name"] == name)
    return vectors.case_from_json(entry["case"])


def test_a_case_with_its_mask_lifted_or_its_empty_residual_given_mass_keeps_the_oracle_tokens():
    # the twins of RUN-FINDING-1's mask and empty-residual probes: the oracle emits the same tokens on them (under
    # the reference draws, any seed), with no token at p = 0 and no empty residual left
    empty = _vector_case("residual-without-mass-samples-p")  # q(d) = 0 = p(d), p = q: the residual has no mass
    for seed in range(20):
        case = replace(empty, seeds=np.array([seed]))
        for twin in (rj.masks_lifted(case), rj.residual_given_mass(case)):
            assert rs.sample_case(twin)[0].tolist() == rs.sample_case(case)[0].tolist()
    assert not np.isneginf(rj.masks_lifted(empty).target_logits).any()
    assert rj.residual_given_mass(empty).draft_probs[0].tolist() == [0.25, 0.25, 0.5]  # q(d) > 0, p(d) = 0: rejected
    plain = _vector_case("one-hot-seeded")
    assert rj.masks_lifted(plain) is None and rj.residual_given_mass(plain) is None
    # a draft with q(d) = 0 is rejected by rule, by no comparison: no rounding boundary (RS-RNG-3) to skip it at
    assert rs.sample_case(empty)[2][0].accept_margins == [np.inf]


@pytest.mark.parametrize(
    "vector", ["forced-row-accepts-equal-draft", "residual-without-mass-samples-p", "draft-with-zero-q-rejected"]
)
def test_a_rejection_sampled_from_the_next_row_is_rs_prob_2_whatever_mask_or_empty_residual_it_meets(vector):
    # RS-PROB-2: on a rejection at row j the emitted token samples row j's residual. An engine that samples row
    # j + 1 instead emits a token with p = 0 where row j masks it (which RS-PROB-3 forbids too) or where its residual
    # is empty (RS-PROB-4's); with the mask lifted, or the residual given mass, it still parts: RS-PROB-2's failure
    engine = zoo.make_mutant("rejection-sampled-one-row-late")
    case = _vector_case(vector)
    assert rj.violations(case, *engine.rejection_sample(case))  # it parts from the oracle on the vector

    def usable(candidate):
        return comparable(candidate, "lowest")

    attributed = rejection_minimal.attribute(engine, engine.profile, case, True, "lowest", usable)
    assert attributed.owner.requirement == "RS-PROB-2"


DROP_BONUS = """
# drop_bonus.py: a rejection adapter (docs/engines.md) over the reference that drops the bonus token
import numpy as np

from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.profiles import Profile

CLASSES = ("rs.layout", "rs.greedy", "rs.probabilistic", "rs.one-hot", "rs.mixed", "rs.zero-draft", "rs.forced")


class DropBonus:
    name, version, device = "drop-bonus", "0.1", "cpu"
    profile = Profile(
        "drop-bonus",
        classes=frozenset(CLASSES + ("rs.input", "rs.seeded", "ac.count", "ac.metrics")),
        capabilities=frozenset({"rejection", "reference-draws", "seeded", "input-validation", "counting", "metrics"}),
    )

    def __init__(self):
        self.reference = ReferenceEngine("cpu", "torch")

    def count_emitted(self, token_ids, vocab_size):
        return self.reference.count_emitted(token_ids, vocab_size)

    def acceptance_metrics(self, steps, eos_token_ids):
        return self.reference.acceptance_metrics(steps, eos_token_ids)

    def rejection_sample(self, case):
        tokens, num = (np.array(x) for x in self.reference.rejection_sample(case))
        for i, k in enumerate(case.num_draft_tokens):
            if num[i] == k + 1:  # every draft accepted: the bonus row's token is not emitted
                tokens[i, k], num[i] = -1, k
        return tokens, num


def make():
    return DropBonus()
"""

EXACT_CHECKS = (  # the exact checks a bonus token can fail, without the slow wide-vocabulary ones
    "rejection/greedy",
    "rejection/zero-draft",
    "rejection/forced",
    "counting/*",
    "vectors/rejection/greedy-*",
    "vectors/rejection/forced-*",
    "vectors/rejection/ragged-layout",
    "vectors/rejection/probabilistic-seeded-mixed-batch",
    "vectors/counting/*",
)


@pytest.mark.req("RUN-FINDING-1")
def test_an_adapter_that_drops_the_bonus_token_has_one_finding(tmp_path, monkeypatch):
    (tmp_path / "drop_bonus.py").write_text(DROP_BONUS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    engine = EngineProcess("drop_bonus:make")
    try:
        records = runner.run_checks(
            engine,
            select(checks.kernel_checks(), EXACT_CHECKS),
            lambda info: Context(profile=info.profile),
            run_dir=tmp_path / "run",
        )
    finally:
        engine.stop()
    found = findings.findings(records)
    assert [(f.name, f.requirement) for f in found] == [("RS-ZERO-1", "RS-ZERO-1")], [
        (f.name, f.checks, f.first[0].results[f.requirement].evidence) for f in found
    ]
    (finding,) = found
    assert {"rejection/greedy", "rejection/zero-draft", "counting/sampler"} <= set(finding.checks)
    # the minimal case: one request, no drafts, its bonus token missing
    reproduction = json.loads(
        (
            tmp_path
            / "run"
            / next(r.results["RS-ZERO-1"].reproduction for r in records if r.check == "rejection/greedy")
        ).read_text()
    )
    assert reproduction["fingerprint"] == "RS-ZERO-1/zero-draft-count"
    assert reproduction["exact"][0]["case"]["num_draft_tokens"] == [0]
    greedy = next(r for r in records if r.check == "rejection/greedy")
    assert greedy.results["RS-GREEDY-2"].status in ("BLOCKED", "PASS")
    assert "BLOCKED" in {result.status for result in greedy.results.values()}
