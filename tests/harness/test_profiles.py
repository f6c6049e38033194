import pytest

from specconform.harness import spec
from specconform.harness.profiles import canonical, load_profile


@pytest.mark.req("RUN-PROFILE-1")
def test_profiles_select_classes_variants_and_capabilities(tmp_path):
    assert canonical().claims("tb.scope.request") and not canonical().claims("tb.scope.section")
    path = tmp_path / "engine.yaml"
    path.write_text("name: e\nscope: section\ndrop_classes: [rs.seeded]\ncapabilities: [budget, rejection]\n")
    profile = load_profile(str(path))
    assert profile.scope == "section" and profile.claims("tb.scope.section")
    assert not profile.claims("tb.scope.request") and not profile.claims("rs.seeded")
    assert set(profile.classes) <= set(spec.classes())
    path.write_text("classes: [tb.nonsense]\n")
    with pytest.raises(ValueError, match="classes must be one of .*got 'tb.nonsense'"):
        load_profile(str(path))
    with pytest.raises(ValueError, match="built-in profile|YAML"):
        load_profile("no-such-profile")


@pytest.mark.req("RS-LAYOUT-3")
def test_a_declared_padded_layout_reads_rows_through_num_emitted(tmp_path):
    """Tails written as 0 after num_emitted break the canonical layout (RS-LAYOUT-2) and are unspecified
    under the declared padded layout."""
    from specconform.harness.adapters import zoo
    from specconform.harness.checks import by_name
    from specconform.harness.core import Context

    engine = zoo.make_mutant("tail-filled-with-zero")
    check = by_name()["rejection/output-contract"]
    canonical_outcome = check.run(engine, Context(profile=engine.profile))
    assert canonical_outcome.requirements["RS-LAYOUT-2"].status == "FAIL"
    path = tmp_path / "padded.yaml"
    path.write_text("name: padded\nlayout: padded\n")
    padded = load_profile(str(path))
    assert padded.layout == "padded" and padded.to_json()["layout"] == "padded"
    assert check.run(engine, Context(profile=padded)).status == "PASS"


def test_an_unknown_layout_is_an_error_naming_it(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("layout: strided\n")
    with pytest.raises(ValueError, match="layout must be one of ragged, padded; got 'strided'"):
        load_profile(str(path))


@pytest.mark.req("RUN-PROFILE-3")
def test_a_non_exact_verification_mode_claims_no_exact_class_and_is_named(tmp_path):
    from specconform.harness.profiles import EXACT_RULE_CLASSES

    path = tmp_path / "synthetic.yaml"
    path.write_text("name: vllm-synthetic\nverification: synthetic\n")
    with pytest.raises(ValueError, match=r"verification 'synthetic' is not exact.*rs\.greedy.*drop_classes"):
        load_profile(str(path))
    path.write_text(f"name: vllm-synthetic\nverification: synthetic\ndrop_classes: [{', '.join(EXACT_RULE_CLASSES)}]\n")
    profile = load_profile(str(path))
    assert not any(profile.claims(c) for c in EXACT_RULE_CLASSES) and profile.claims("rs.forced")
    assert profile.label == "vllm-synthetic (verification: synthetic)" and canonical().label == "canonical"
    assert profile.to_json()["verification"] == "synthetic"


@pytest.mark.req("RUN-PROFILE-3")
def test_a_lossless_mode_is_judged_on_the_output_distribution_alone(tmp_path):
    from specconform.harness import checks, runner
    from specconform.harness.core import FAIL, NOT_APPLICABLE, NOT_CLAIMED, PASS, Outcome, RequirementResult

    path = tmp_path / "block.yaml"
    path.write_text("name: vllm-block\nverification: block\nclasses: [rs.greedy, rs.probabilistic, stat]\n")
    with pytest.raises(ValueError, match=r"verification 'block' is not exact.*rs\.greedy"):
        load_profile(str(path))
    path.write_text("name: vllm-block\nverification: block\nclasses: [rs.probabilistic, rs.one-hot, stat]\n")
    block = load_profile(str(path))
    catalogue = checks.by_name()
    rule, distribution = catalogue["rejection/acceptance-rule"], catalogue["rejection/distribution"]
    assert runner.gate(rule, block)[0] == NOT_APPLICABLE and "verification: block" in runner.gate(rule, block)[1]
    assert runner.gate(distribution, block) is None
    assert runner.gate(catalogue["rejection/greedy"], block)[0] == NOT_CLAIMED
    assert runner.gate(rule, canonical()) is None
    judged = {rid: RequirementResult(PASS, 1) for rid in distribution.requirements}
    judged["RS-PROB-6"] = RequirementResult(FAIL, 1, "accepted length", "RS-PROB-6/accepted-length-law")
    outcome = runner.judged_on_engine_values(distribution, Outcome(FAIL, "x", judged), block)
    assert outcome.requirements["RS-PROB-6"].status == NOT_APPLICABLE
    assert outcome.requirements["RS-PROB-5"].status == PASS and outcome.status == PASS
    assert runner.judged_on_engine_values(distribution, Outcome(FAIL, "x", judged), canonical()).status == FAIL


@pytest.mark.req("RUN-PROFILE-1")
def test_a_profile_declares_its_draw_scheme_by_a_known_name(tmp_path):
    """``draws:`` names a scheme of specconform.harness.oracle.draws; an unknown name is an error naming it and the
    known ones; the reference draws go with the capability reference-draws and are never inherited without it."""
    from specconform.harness import products

    path = tmp_path / "engine.yaml"
    path.write_text("capabilities: [rejection, seeded]\ndraws: vllm-mrv2\n")
    assert load_profile(str(path)).draws == "vllm-mrv2"
    assert load_profile(str(path)).to_json()["draws"] == "vllm-mrv2"
    path.write_text("capabilities: [rejection, seeded]\n")
    assert canonical().draws == "reference" and load_profile(str(path)).draws is None
    path.write_text("capabilities: [rejection, seeded]\ndraws: vllm-mrv3\n")
    with pytest.raises(ValueError, match="draws must be one of reference, vllm-mrv2, sglang-seeded.*'vllm-mrv3'"):
        load_profile(str(path))
    path.write_text("draws: sglang-seeded\n")  # the canonical capabilities, reference-draws among them
    with pytest.raises(ValueError, match="reference-draws"):
        load_profile(str(path))
    # the engines whose draws the oracle has declare them with the version they were read from
    declared = {name: products.profile_of(name).draws for name in ("vllm-mrv2", "vllm-mrv2-block", "sglang")}
    assert declared == {"vllm-mrv2": "vllm-mrv2", "vllm-mrv2-block": "vllm-mrv2", "sglang": "sglang-seeded"}
