import pytest

from harness import spec
from harness.profiles import canonical, load_profile


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
    with pytest.raises(ValueError, match="unknown classes"):
        load_profile(str(path))
    with pytest.raises(ValueError, match="built-in profile|YAML"):
        load_profile("no-such-profile")
