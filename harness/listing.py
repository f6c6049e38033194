"""What ``specconform list engines`` and ``specconform list profiles`` print: one line per engine form and per
profile, each with what it is. A profile's line is written from the profile itself (its scope, its classes, an
API profile's fields), so that it cannot drift from what the run uses."""

from __future__ import annotations

from .adapters.http import API_PROFILES, ApiProfile
from .profiles import BUILTIN

# the forms ``--engine`` accepts (``adapters.ENGINE_FORMS``), each with what it judges
ENGINES = {
    "oracle": "the specification's executable oracle (harness/oracle): what every engine is compared with",
    "reference[:cpu|cuda[:torch|triton]]": "the reference implementation (impl/): torch or Triton kernels",
    "embedded[:single|multi]": "the embedded OpenAI-compatible server (a tiny offline model), judged over HTTP",
    "openai": "a server you started: --base-url and --model (--api-profile names its request fields)",
    "zoo:<mutant>": "a deliberately broken reference, one bug each (`specconform zoo` runs them all)",
    "harness.adapters.vllm:make": "vLLM's legacy model runner, in process",
    "harness.adapters.vllm_mrv2:make": "vLLM's model runner v2, in process",
    "harness.adapters.lmdeploy:make": "lmdeploy's pure-torch verifier (:make_triton, its Triton one), in process",
    "harness.adapters.sglang:make": "SGLang's budget logit processor and Triton chain sampler, in process",
    "module:factory": "an engine team's own adapter: a function that returns the engine",
}


def engine_lines() -> list[str]:
    width = max(map(len, ENGINES))
    return [f"{form:{width}}  {what}" for form, what in ENGINES.items()]


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
