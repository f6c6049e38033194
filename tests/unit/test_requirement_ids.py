"""Only registry ids: an id that specs/requirements.yaml does not hold is an error where it is written (a check's
declaration, a mutant, a check body's tally), naming the id, where, and the registry id it is nearest to; a check
that finds another registry requirement broken still records it."""

import pytest

from specconform.harness.adapters.zoo.registry import Mutant
from specconform.harness.core import FAIL, PASS, Check, Tally
from specconform.harness.spec import UnknownRequirement


def test_a_misspelt_id_in_a_tally_is_an_error_naming_it_and_the_nearest_registry_id():
    tally = Tally(("TB-FORCE-1",))
    with pytest.raises(UnknownRequirement, match=r"Tally.violated names TB-FORSE-1, .* did you mean TB-FORCE-1\?"):
        tally.violated("TB-FORSE-1", "left-a-forced-row-free", "row 0 free")
    assert "TB-FORSE-1" not in tally.outcome("x").requirements
    with pytest.raises(UnknownRequirement, match=r"Tally.exercised names TB-FORCE1, .* did you mean TB-FORCE-1\?"):
        tally.exercised("TB-FORCE1")
    with pytest.raises(UnknownRequirement, match="Tally.blocked names TB-FORCE-3, .* alias .* now TB-FORCE-1"):
        tally.blocked("TB-FORCE-3", "TB-FORCE-1", "the same case")
    with pytest.raises(UnknownRequirement, match="Tally.not_applicable names RS-LAYOUT-3, .* a permission"):
        tally.not_applicable("padded", "RS-LAYOUT-3")
    with pytest.raises(UnknownRequirement, match=r"Tally\(requirements\) names XYZ, .* no registry id is near it"):
        Tally(("TB-FORCE-1", "XYZ"))
    with pytest.raises(UnknownRequirement, match=r"Tally\(conditional\) names API-USAGE-9"):
        Tally(("API-USAGE-1",), conditional=("API-USAGE-9",))


def test_a_registry_id_outside_the_check_is_still_recorded_as_broken():
    tally = Tally(("RS-GREEDY-1",))
    tally.exercised("RS-GREEDY-1")
    tally.violated("RS-INPUT-1", "id-outside-vocabulary", "id 7 with V = 7")
    outcome = tally.outcome("greedy")
    assert outcome.status == FAIL and outcome.violated == ("RS-INPUT-1",)
    assert outcome.requirements["RS-GREEDY-1"].status == PASS
    with pytest.raises(KeyError, match="RS-INPUT-2 is not among the check's requirements"):
        tally.exercised("RS-INPUT-2")  # a registry id, but only ``violated`` adds one the check does not cover


def test_a_check_or_mutant_declared_with_an_unknown_id_fails_at_declaration():
    with pytest.raises(UnknownRequirement, match=r"check budget/x names TB-FROCE-1, .* did you mean TB-FORCE-1\?"):
        Check("budget/x", "tb.core", ("TB-FROCE-1",), (), "d", print)
    with pytest.raises(UnknownRequirement, match="check budget/x's observes names TB-FORCE-9"):
        Check("budget/x", "tb.core", ("TB-FORCE-1",), (), "d", print, observes=(("TB-FORCE-9", ("logits",)),))
    Check("budget/x", "tb.core", ("TB-FORCE-1",), (), "d", print, observes=(("*", ("logits",)),))
    with pytest.raises(UnknownRequirement, match=r"mutant off-by-one names TB-FORCE-0, .* did you mean TB-FORCE-"):
        Mutant("off-by-one", "TB-FORCE-0", "d")
