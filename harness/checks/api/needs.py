"""The capabilities an API-level check needs of the server (``HTTP``, ``IDS``, ``SPEC``, ``PLAIN``), and
``_precondition``: PRECONDITION_FAILED, naming what is missing, where the engine's profile lacks them.
"""

from __future__ import annotations

from ...core import PRECONDITION_FAILED, Outcome, uniform_outcome

# What each check needs of the server, declared so that the runner and `specconform doctor` know it before the check
# runs (each check's own precondition says the same when it is called directly).
HTTP = ("http",)  # a server
IDS = (*HTTP, "token-ids", "marker-ids")  # token ids in responses, the markers' ids from /tokenize
SPEC = (*IDS, "spec-model")
PLAIN = (*HTTP, "plain-model")


def _precondition(engine, requirements, *, ids=True, spec_model=False, plain_model=False) -> Outcome | None:
    capabilities = engine.profile.capabilities
    missing = []
    if ids and not {"token-ids", "marker-ids"} <= capabilities:
        problem = getattr(engine, "probe_problem", "")
        missing.append(
            "the engine returns no token ids or marker ids" + (f" (probing it: {problem})" if problem else "")
        )
    if spec_model and "spec-model" not in capabilities:
        missing.append("the profile names no speculative-decoding model")
    if plain_model and "plain-model" not in capabilities:
        missing.append("the profile names no model without reasoning markers")
    return uniform_outcome(PRECONDITION_FAILED, "; ".join(missing), requirements) if missing else None
