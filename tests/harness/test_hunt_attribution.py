"""A hunt's violations attributed by their cases, as every other failure is (RUN-FINDING-1): a token of p = 0 sampled
where the residual max(p - q, 0) is empty is RS-PROB-4's (the emitted token is then a sample of p), whichever
invariant met it; a violation whose case breaks only the invariant's own requirement stays there; violations of
several invariants on one case are one finding; a case that replays alone is shrunk; where the oracle finds nothing
the invariant's requirement is kept with the reason; and the published records re-render from their JSON without an
engine."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.cli import main
from specconform.harness.hunt import HuntOptions, hunt, write_record
from specconform.harness.hunt.attribution import hunt_findings
from specconform.harness.hunt.replay import minimal_case
from specconform.harness.vectors import case_from_json
from specconform.harness.vectors.codec import case_json
from specconform.specs.interface import RejectionCase

NEG = -np.inf
ROOT = Path(__file__).resolve().parents[2]
MRV2 = "proofs/vllm-0.33-mrv2/empty-residual-emits-token-0.hunt.json"
V1 = "proofs/vllm-0.33-v1/empty-residual-emits-token-0.hunt.json"


def softmax(logits, temperature):
    """p of one row, written here apart from the oracle: softmax(logits / T), -inf as 0."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z[np.isfinite(z)].max())
    return e / e.sum()


def record_of(invariant, case, emitted, width=None):
    """A hunt record holding one violation of ``invariant``: ``case`` (one request) emitting ``emitted``."""
    width = width or int(case.num_draft_tokens[0]) + 1
    violation = {
        "invariant": invariant,
        "device": "cpu",
        "launch": 0,
        "request": 0,
        "row": len(emitted) - 1,
        "seed": None if case.seeds is None else int(case.seeds[0]),
        "position": 0 if case.positions is None else int(case.positions[0]),
        "case": case_json(case),
        "token_ids": list(emitted) + [-1] * (width - len(emitted)),
        "num_emitted": len(emitted),
        "replayed_alone": True,
        "reproduced": True,
    }
    return {"seed": 1, "draws": 1, "vocab_size": case.vocab_size, "devices": [], "violations": [violation]}


def one_draft(p_row, q_row, draft, seeds=None):
    logits = np.log(np.array([p_row, [0.25] * len(p_row)]))  # log 0 = -inf: a mask
    return RejectionCase(logits, [draft], [1], [1.0], np.array([q_row]), [-1, -1], seeds=seeds, positions=[5])


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("seeds", [None, [11]])
def test_a_zero_probability_token_sampled_from_an_empty_residual_is_rs_prob_4(seeds):
    # p = q up to 1e-9 on row 0: the draft may be rejected by rounding, and the residual max(p - q, 0) then has no
    # mass within rounding, so the emitted token is a sample of p (RS-PROB-4). Id 0 has p = 0: no sample of p
    p, q = [0.0, 0.5 - 1e-9, 0.5 + 1e-9, 0.0], [0.0, 0.5, 0.5, 0.0]
    assert np.maximum(np.subtract(p, q), 0).sum() < 1e-5 and p[0] == 0
    case = one_draft(p, q, 1, seeds)
    (finding,) = hunt_findings(record_of("emitted-in-support", case, [0]), "r.json")
    assert (finding.requirement, finding.mode) == ("RS-PROB-4", "empty-residual-emits-zero-probability-token")
    assert finding.invariants == ("emitted-in-support (RS-INPUT-2)",) and not finding.unjudged
    # the same p = 0 token where the residual has mass (0.8 on id 1) is the token's own fault (RS-PROB-3), the
    # project's rule for a sample p forbids: the residual's rule is not what the case isolates
    full = one_draft([0.0, 0.9, 0.1, 0.0], [0.0, 0.1, 0.9, 0.0], 2, seeds)
    (finding,) = hunt_findings(record_of("emitted-in-support", full, [0]), "r.json")
    assert (finding.requirement, finding.mode) == ("RS-PROB-3", "zero-probability-token")


def test_the_published_empty_residual_violations_are_rs_prob_4():
    """vLLM 0.33's records (both runners): the emitted id has a -inf target logit at a rejected draft row whose
    residual, computed here from the recorded case, is empty within rounding."""
    for path in (MRV2, V1):
        record = json.loads((ROOT / path).read_text())
        violation = record["violations"][0]
        case = case_from_json(violation["case"])
        j = violation["num_emitted"] - 1
        token, draft = violation["token_ids"][j], int(case.draft_token_ids[j])
        p = softmax(case.target_logits[j], float(case.temperature[0]))
        assert j < case.num_draft_tokens[0] and token != draft and p[token] == 0
        assert np.maximum(p - case.draft_probs[j], 0).sum() < 1e-5
        (finding,) = hunt_findings(record, path)
        assert finding.requirement == "RS-PROB-4" and "emitted-in-support (RS-INPUT-2)" in finding.invariants
    # judged under Model Runner V2's own draws too (its profile's draws: vllm-mrv2), which cannot decide the draft
    # (u q(d) lies within 1e-5 of p(d)): the p = 0 token needs no draws to be faulted
    mrv2 = json.loads((ROOT / MRV2).read_text()) | {"scheme": "vllm-mrv2"}
    assert [f.requirement for f in hunt_findings(mrv2, MRV2)] == ["RS-PROB-4"]


@pytest.mark.parametrize(
    ("invariant", "forced", "emitted", "requirement"),
    [("emitted-in-vocab", None, [4], "RS-INPUT-1"), ("forced-emitted", [2], [1], "RS-FORCE-1")],
)
def test_a_violation_whose_case_breaks_only_the_invariants_requirement_stays_there(
    invariant, forced, emitted, requirement
):
    # no drafts: the one token is an id in [0, V) (RS-INPUT-1), the forced one where forced (RS-FORCE-1); id 4 lies
    # outside [0, 4) and p has mass on every id, so nothing else is broken
    case = RejectionCase(np.zeros((1, 4)), [], [0], [1.0], None, forced, seeds=[3], positions=[0])
    (finding,) = hunt_findings(record_of(invariant, case, emitted), "r.json")
    assert finding.requirement == requirement and not finding.unjudged


def test_where_the_oracle_finds_nothing_the_invariants_requirement_is_kept_with_why():
    case = RejectionCase(np.zeros((1, 4)), [], [0], [1.0], None, None, seeds=[3], positions=[0])
    record = record_of("emitted-in-support", case, [1])  # id 1 has p = 1/4: no rule broken
    record["violations"].append(dict(record["violations"][0], case=None))
    nan = dict(record["violations"][0]["case"], target_logits=[["nan", 0.0, 0.0, 0.0]])  # RS-INPUT-3: not valid
    record["violations"].append(dict(record["violations"][0], case=nan))
    (finding,) = hunt_findings(record, "r.json")
    assert finding.requirement == "RS-INPUT-2" and finding.violations == (0, 1, 2)
    assert "finds no rule broken by the recorded output [1]" in finding.unjudged
    assert [
        hunt_findings(dict(record, violations=[v]), "r.json")[0].unjudged[:27] for v in record["violations"][1:]
    ] == [
        "the record holds no case fo",
        "the recorded case is not a ",
    ]
    assert "kept under the invariant's requirement" in finding.line()


def test_two_invariants_on_one_case_are_one_finding_with_its_replay(tmp_path):
    """The zoo's zero-coin mutant accepts a draft of p = 0: two invariants see it (p-zero-draft-rejected,
    emitted-in-support) on the same request, one finding: RS-PROB-3, "never emitted as an accepted draft"."""
    record = hunt(HuntOptions("specconform.harness.adapters.zoo.rare:make", 10_000, 500, 33, 7, 300.0), None)
    json_path, markdown_path = write_record(record, tmp_path)
    data = json.loads(json_path.read_text())
    assert {v["invariant"] for v in data["violations"]} == {"p-zero-draft-rejected", "emitted-in-support"}
    for violation in data["violations"]:
        case = case_from_json(violation["case"])
        assert violation["num_emitted"] > 1 and case.target_logits[0, violation["token_ids"][0]] == NEG
    (finding,) = data["findings"]
    assert finding["requirement"] == "RS-PROB-3" and len(finding["invariants"]) == 2
    assert finding["replay"] == f"specconform hunt --replay {json_path} --engine {record.engine_spec}"
    assert "  - finding RS-PROB-3 (" in markdown_path.read_text()


def test_the_published_records_render_again_from_their_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["hunt", "--render", MRV2, V1, "--report-dir", str(tmp_path), "--engine", "ENG:make"]) == 1
    mrv2 = (tmp_path / "hunt-vllm-0.33-mrv2.md").read_text()
    assert "finding RS-PROB-4 (empty-residual-emits-zero-probability-token)" in mrv2
    assert f"`specconform hunt --replay {MRV2} --engine ENG:make`" in mrv2
    # the legacy runner's draws are its launch's: its replay hunts again with the record's seed
    v1 = (tmp_path / "hunt-vllm-0.33-v1.md").read_text()
    assert "finding RS-PROB-4" in v1 and "specconform hunt --engine ENG:make --seed 20261129 " in v1
    capsys.readouterr()
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    assert main(["hunt", "--render", str(broken), "--report-dir", str(tmp_path)]) == 2
    assert f"--render {broken}: not a hunt record" in capsys.readouterr().err
    assert main(["hunt", "--render", MRV2]) == 2
    assert "--report-dir" in capsys.readouterr().err


class LastIdOutsideVocab:
    """The oracle's rows with the last emitted id replaced by V, outside [0, V) (RS-INPUT-1) whatever the drafts."""

    def __init__(self):
        self.oracle = OracleEngine()

    def rejection_sample(self, case):
        tokens, num = (np.array(x) for x in self.oracle.rejection_sample(case))
        tokens[0, int(num[0]) - 1] = case.vocab_size
        return tokens, num


def test_a_violation_that_replays_alone_is_shrunk_while_the_engine_still_breaks_its_invariant():
    engine = LastIdOutsideVocab()
    logits = np.zeros((3, 4))
    case = RejectionCase(logits, [1, 2], [2], [1.0], np.full((2, 4), 0.25), [-1, -1, -1], seeds=[9], positions=[4])
    tokens, num = engine.rejection_sample(case)
    minimal = minimal_case(engine, case, "emitted-in-vocab", one_hot=False)
    # every draft dropped: the one token of a zero-draft request is still replaced by V
    assert minimal["case"]["num_draft_tokens"] == [0] and minimal["token_ids"][:1] == [4]
    record = record_of("emitted-in-vocab", case, tokens[0][: int(num[0])].tolist())
    record["violations"][0]["minimal"] = minimal
    (finding,) = hunt_findings(record, "r.json")
    assert finding.requirement == "RS-INPUT-1" and "K=0," in finding.case and "(shrunk from K=2)" in finding.case
    assert minimal_case(engine, case_from_json(minimal["case"]), "emitted-in-vocab", one_hot=False) is None
