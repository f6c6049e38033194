"""What ``specconform list engines`` and ``specconform list profiles`` print: one line per engine form, per
product and per profile, each with what it is. A product's line is read from its record
(``specconform.harness.products``), and a profile's line is written from the profile itself (its scope, its classes, an
API profile's fields), so that neither can drift from what the run uses."""

from __future__ import annotations

from . import products
from .adapters.http import API_PROFILES, ApiProfile
from .profiles import BUILTIN

# the forms ``--engine`` accepts (``adapters.ENGINE_FORMS``) that are no product's adapter, each with what it judges
FORMS = {
    "oracle": "the specification's executable oracle (harness/oracle): what every engine is compared with",
    "reference[:cpu|cuda[:torch|triton]]": "the reference implementation (impl/): torch or Triton kernels",
    "embedded[:single|multi]": "the embedded OpenAI-compatible server (a tiny offline model), judged over HTTP",
    "openai": "a server you started: --base-url and --model (--api-profile names its request fields)",
    "zoo:<mutant>": "a deliberately broken reference, one bug each (`specconform zoo` runs them all)",
    "module:factory": "an engine team's own adapter: a function that returns the engine",
    "<registered-name>": "the adapter an installed package registers by that name (entry points specconform.engines)",
}


def _product_form(product: products.Product) -> str:
    """How a product is named on the command line: its engine forms, with its API profile."""
    api_profile = f" --api-profile {product.record.api_profile}" if product.record.api_profile else ""
    return ", ".join(product.record.engines) + api_profile


def engine_lines() -> list[str]:
    """The forms ``--engine`` accepts, then the products: the engines this project judges and publishes, each with
    the engine forms it is judged as."""
    width = max(map(len, FORMS))
    lines = [f"{form:{width}}  {what}" for form, what in FORMS.items()]
    rows = [(name, _product_form(product), product.record.description) for name, product in products.products().items()]
    name_width, form_width = (max(len(row[i]) for row in rows) for i in (0, 1))
    lines += [
        "",
        "products (--product NAME), each defined in harness/products/<name>/ (adapter, profile, expectations, install, "
        "judge):",
    ]
    return lines + [f"{name:{name_width}}  {form:{form_width}}  {what}" for name, form, what in rows]


def _api_profile(name: str) -> str:
    profile = ApiProfile(name=name, model="", **API_PROFILES[name])
    budget = f"budget field {profile.budget_field}" if profile.budget_field else "no thinking budget"
    ids = f"token ids by {profile.token_ids}" if profile.token_ids else "no token ids"
    counters = f"counters {profile.spec_counters}" if profile.spec_counters else "no speculation counters"
    return f"{budget}, reasoning field {profile.reasoning_field}, {ids}, {counters}, {profile.scope} scope"


def profile_lines() -> list[str]:
    """The built-in profiles (``--profile``) and the API profiles (``--api-profile``, with ``--engine openai``)."""
    rows = []
    for name, make in BUILTIN.items():
        profile = make()
        classes = f"the canonical kernel-level classes ({len(profile.classes)})"
        rows.append((name, "--profile", f"{classes}, {profile.scope} scope"))
    rows += [(name, "--api-profile", _api_profile(name)) for name in API_PROFILES]
    width = max(len(name) for name, _, _ in rows)
    return [f"{name:{width}}  {option:13}  {what}" for name, option, what in rows]
