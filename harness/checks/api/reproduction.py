"""A failed API-level check leaves the chat requests it sent as a standalone reproduction
(``leaves_reproductions``); a response the ``openai`` client cannot parse fails the check's requirements
(``client_parses``). ``specconform.harness.checks`` wraps every API-level check in both.
"""

from __future__ import annotations

import functools
import json
import shlex

from ... import spec, vectors
from ...core import FAIL, Context, Outcome, Tally, UnparsableResponse


def curl(exchange: dict) -> str:
    """A shell command that sends one logged chat request again (``ApiEngine.exchanges``)."""
    return (
        f"curl -s {shlex.quote(exchange['url'])} -H 'Content-Type: application/json' "
        f"-d {shlex.quote(json.dumps(exchange['body']))}"
    )


def reproduction_document(check: str, rid: str, fingerprint: str, evidence: str, seed: int, exchanges) -> dict:
    """A standalone API reproduction: the check and seed that ``specconform replay`` re-runs, the
    requirement and the property it states, and every chat request the check sent (as JSON and as a
    curl command) with the response the engine gave, as ``kept_for_reproduction`` keeps it."""
    statement = spec.load_registry()[rid].summary
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "api",
        "fingerprint": fingerprint,
        "check": check,
        "requirement": rid,
        "expected": statement,
        "observed": evidence,
        "seed": seed,
        "requests": [{**exchange, "curl": curl(exchange)} for exchange in exchanges],
    }


def leaves_reproductions(name: str, run):
    """``run`` (an API check named ``name``), where every failed requirement carries a reproduction
    (``reproduction_document``) of the requests the check sent."""

    @functools.wraps(run)
    def judged(engine, ctx: Context) -> Outcome:
        log = getattr(engine, "exchanges", None)
        if log is not None:
            log.clear()
        outcome = run(engine, ctx)
        for rid, result in outcome.requirements.items():
            if result.status == FAIL and result.reproduction is None:
                result.reproduction = reproduction_document(
                    name, rid, result.fingerprint, result.evidence, ctx.seed, list(log or ())
                )
        return outcome

    return judged


def client_parses(run, requirements: tuple[str, ...]):
    """``run`` (a check over an ``ApiEngine``), where a response the ``openai`` client cannot parse
    fails every requirement the check judges, with the client's error as the evidence."""

    @functools.wraps(run)
    def judged(engine, ctx: Context) -> Outcome:
        try:
            return run(engine, ctx)
        except UnparsableResponse as error:
            tally = Tally(requirements)
            for rid in requirements:
                tally.violated(rid, "response-unparsable", str(error))
            return tally.outcome(f"a response the openai client cannot parse: {error}")

    return judged
