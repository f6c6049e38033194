"""The capabilities an API-level check needs of the server (``HTTP``, ``OUTPUT_IDS``, ``IDS``, ``SPEC``,
``BUDGET_SPEC``, ``PLAIN``), and
``unmet_precondition``: PRECONDITION_FAILED, naming what is missing, where the engine's profile lacks them.
"""

from __future__ import annotations

from ...core import PRECONDITION_FAILED, Outcome, uniform_outcome

# What each check needs of the server, declared so that the runner and `specconform doctor` know it before the check
# runs (each check's own precondition says the same when it is called directly).
HTTP = ("http",)  # a server
OUTPUT_IDS = (*HTTP, "token-ids")  # the generated tokens' ids in responses
# and the prompt's ids in responses and the markers' ids from /tokenize (what replaying the budget needs)
IDS = (*OUTPUT_IDS, "marker-ids")
SPEC = (*OUTPUT_IDS, "spec-model")  # speculative decoding judged on the generated ids
BUDGET_SPEC = (*IDS, "spec-model")
PLAIN = (*HTTP, "plain-model")


def unmet_precondition(
    engine, requirements, *, ids=True, markers=True, spec_model=False, plain_model=False
) -> Outcome | None:
    """PRECONDITION_FAILED where ``engine`` lacks what a check needs: ``ids`` the generated ids, ``markers`` (with
    ``ids``) the prompt's and the markers' ids too; None where it has everything."""
    capabilities = engine.profile.capabilities
    missing = []
    needed = {"token-ids", "marker-ids"} if markers else {"token-ids"}
    if ids and not needed <= capabilities:
        problem = getattr(engine, "probe_problem", "")
        lacking = " or ".join(sorted(needed - capabilities))
        missing.append(f"the engine returns no {lacking}" + (f" (probing it: {problem})" if problem else ""))
    if spec_model and "spec-model" not in capabilities:
        missing.append("the profile names no speculative-decoding model")
    if plain_model and "plain-model" not in capabilities:
        missing.append("the profile names no model without reasoning markers")
    return uniform_outcome(PRECONDITION_FAILED, "; ".join(missing), requirements) if missing else None
