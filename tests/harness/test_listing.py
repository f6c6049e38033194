"""`specconform list engines` and `list profiles`: one line each, with what it is."""

from harness import cli, listing
from harness.adapters import ENGINE_FORMS
from harness.adapters.http import API_PROFILES
from harness.profiles import BUILTIN


def _lines(capsys, what) -> list[str]:
    assert cli.main(["list", what]) == 0
    return capsys.readouterr().out.splitlines()


def test_every_engine_form_is_listed_with_a_description(capsys):
    lines = _lines(capsys, "engines")
    assert [line.split()[0] for line in lines] == [form.split()[0] for form in ENGINE_FORMS]
    assert all(len(line.split(None, 1)) == 2 for line in lines)
    assert set(listing.ENGINES) == {form.split()[0] for form in ENGINE_FORMS}


def test_every_profile_and_api_profile_is_listed_from_what_it_declares(capsys):
    lines = {line.split()[0]: line for line in _lines(capsys, "profiles")}
    assert set(lines) == set(BUILTIN) | set(API_PROFILES)
    assert "--profile" in lines["canonical"] and "request scope" in lines["canonical"]
    assert "section scope" in lines["canonical-section"]
    assert "budget field thinking_token_budget" in lines["vllm"] and "--api-profile" in lines["vllm"]
    assert "no thinking budget" in lines["transformers-serve"]
