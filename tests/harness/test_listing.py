"""`specconform list engines` and `list profiles`: one line each, with what it is."""

from specconform.harness import cli, listing, products
from specconform.harness.adapters import ENGINE_FORMS
from specconform.harness.adapters.http import API_PROFILES
from specconform.harness.profiles import BUILTIN


def _lines(capsys, what) -> list[str]:
    assert cli.main(["list", what]) == 0
    return capsys.readouterr().out.splitlines()


def test_every_engine_form_and_every_product_is_listed_with_a_description(capsys):
    lines = _lines(capsys, "engines")
    blank = lines.index("")
    forms, products_lines = lines[:blank], lines[blank + 2 :]
    assert [line.split()[0] for line in forms] == list(listing.FORMS)
    assert all(len(line.split(None, 1)) == 2 for line in forms)
    assert [line.split()[0] for line in products_lines] == list(products.products())
    for line, product in zip(products_lines, products.products().values()):
        assert product.record.engines[0] in line and line.endswith(product.record.description)
    # every form --engine accepts is listed: as a form, or as a product's adapter
    adapters = [form for product in products.products().values() for form in product.record.engines]
    assert {form.split()[0] for form in ENGINE_FORMS} <= set(listing.FORMS) | set(adapters)


def test_every_profile_and_api_profile_is_listed_from_what_it_declares(capsys):
    lines = {line.split()[0]: line for line in _lines(capsys, "profiles")}
    assert set(lines) == set(BUILTIN) | set(API_PROFILES)
    assert "--profile" in lines["canonical"] and "request scope" in lines["canonical"]
    assert "section scope" in lines["canonical-section"]
    assert "budget field thinking_token_budget" in lines["vllm"] and "--api-profile" in lines["vllm"]
    assert "no thinking budget" in lines["transformers-serve"]
