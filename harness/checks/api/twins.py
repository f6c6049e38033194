"""Attribution of API-level failures on seeded sampled requests (RUN-FINDING-1 over HTTP).

Several API checks compare two responses to one seeded request: the whole and the streamed one
(API-STREAM-1), the one served beside fifteen others and the one served alone (API-BUDGET-5). Others judge
a budget on a sampled request served by the speculating model (API-BUDGET-6). A server whose seeded
requests are not reproducible at all fails every such comparison, and a budget check blamed for it names
the wrong defect: the minimal case needs neither streaming, nor concurrency, nor a budget. So a failing
sampled request is tried again the way RUN-FINDING-1 says:

1. the request as the check sent it, alone and not streamed, three times (``alone``). If the repeats agree,
   the failure stands on a reproducible request and stays the check's own, unless it is a budget failure
   that recurs alone: that needs no concurrency, and belongs to the budget requirement of the server it
   was served by and of what it holds (``attribution.budget_owner``).
2. where the repeats differ, the same request without its budget, three times. Where those differ too, a
   seeded request is not reproducible without any of the check's features: the failure is API-SEED-1's,
   recorded with those requests as its reproduction, and the check's own requirement reads BLOCKED. A request
   without a budget (or the minimal case of a comparison that parts before the budget forces anything,
   ``attribution.without_budget_up_to``) has shown it at step 1, its repeats compared with the check's own
   response sent alone and not streamed.

A greedy request draws nothing, so a failed comparison of greedy responses is made again instead
(``recurrences``): one that none of the ``RETRIES`` further tries shows is a one-off, which the check names in
its summary but does not publish as a finding.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from ...core import Context, Tally
from .reproduction import reproduction_document

SEED_RID = "API-SEED-1"
REPEATS = 3  # sends of one request alone; uninitialised memory does not change every draw, so one is too few
RETRIES = 2  # further tries of a failed greedy comparison: a failure none of them shows is a one-off


@dataclass(frozen=True)
class SeededRequest:
    """One chat request as a check sent it: ``budget`` None is none, ``fields`` the profile's extra fields."""

    model: str
    budget: int | None
    max_tokens: int
    temperature: float
    seed: int
    fields: dict | None = None

    def __str__(self) -> str:
        return (
            f"{self.model}, budget {self.budget}, temperature {self.temperature}, seed {self.seed}, "
            f"max_tokens {self.max_tokens}"
        )


def repeats(engine, request: SeededRequest) -> list[dict]:
    """The responses to ``REPEATS`` sends of ``request``, one after another, each alone."""
    return [
        engine.complete(
            request.model,
            request.budget,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            seed=request.seed,
            fields=request.fields,
        )
        for _ in range(REPEATS)
    ]


def ids(responses: list[dict]) -> list[list]:
    """Each response's output token ids. A server that returns none (``transformers serve``) is compared by its
    message instead, one item: its text and reasoning as JSON; another message means other ids."""
    outputs: list[list] = []
    for response in responses:
        choice = response["choices"][0]
        token_ids = choice.get("token_ids")
        outputs.append(token_ids if token_ids is not None else [json.dumps(choice.get("message"), sort_keys=True)])
    return outputs


def differ(responses: list[dict]) -> bool:
    """Whether the responses' token ids are not all the same."""
    outputs = ids(responses)
    return any(output != outputs[0] for output in outputs)


def recurrences(compare: Callable[[], str]) -> list[str]:
    """What ``RETRIES`` further tries of a failed comparison found (``compare`` makes it once more: "" where it
    holds, else what differs), the tries that held left out: an empty list is a one-off."""
    return [found for found in (compare() for _ in range(RETRIES)) if found]


def log_mark(engine) -> int:
    """Where the engine's exchange log stands now (0 for an engine that logs none)."""
    return len(getattr(engine, "exchanges", None) or ())


def requests_since(engine, mark: int) -> list[dict]:
    """The exchanges logged since ``log_mark`` gave ``mark``: the requests of a reproduction."""
    return list((getattr(engine, "exchanges", None) or [])[mark:])


@dataclass
class Alone:
    """What ``alone`` found: the repeats' responses, whether their ids differ, whether the failure was
    attributed (recorded under another requirement, the check's own BLOCKED), and where the log stood before."""

    responses: list[dict]
    differ: bool
    mark: int
    attributed: bool = False


def alone(
    engine,
    ctx: Context,
    tally: Tally,
    check: str,
    own: str,
    request: SeededRequest,
    upto: int | None = None,
    seen: tuple[dict, ...] = (),
    seen_from: int | None = None,
) -> Alone:
    """Try a failure of ``own`` on ``request`` again alone (step 1 of the module's procedure), and where the
    repeats differ, without its budget (step 2; a request without one has shown it at step 1): a greedy request
    (temperature 0) draws nothing and is only repeated. Records API-SEED-1's failure and blocks ``own`` where the
    seed is shown not honoured. ``upto``: ids are compared up to this output position only (where the failure parts,
    before anything the budget forces); ``seen``: earlier responses to the request sent alone and not streamed,
    compared with the repeats, logged from ``seen_from`` on (``log_mark``: those requests join the reproduction)."""
    mark = log_mark(engine)
    responses = repeats(engine, request)
    cut = None if upto is None else upto + 1
    outputs = [output[:cut] for output in ids([*seen, *responses])]
    found = Alone(responses, any(output != outputs[0] for output in outputs), mark)
    if not found.differ or request.temperature == 0:
        return found
    # the reproduction: the requests that show it, the earlier responses' too where the repeats alone do not
    own_repeats = outputs[len(seen) :]
    shown_from = mark if any(o != own_repeats[0] for o in own_repeats) or seen_from is None else seen_from
    unbudgeted = replace(request, budget=None)
    if request.budget is not None:
        shown_from = log_mark(engine)
        outputs = [output[:cut] for output in ids(repeats(engine, unbudgeted))]
        if all(output == outputs[0] for output in outputs):
            return found
    distinct = " vs ".join(str(list(output)) for output in dict.fromkeys(tuple(output) for output in outputs))
    how = f"sent {REPEATS} times alone" if not seen else f"sent alone and not streamed {len(outputs)} times"
    evidence = f"{unbudgeted}, {how}: {distinct}" + (f" (up to output position {upto})" if upto is not None else "")
    tally.violated(
        SEED_RID,
        "seeded-request-not-reproducible",
        evidence,
        reproduction_document(
            check,
            SEED_RID,
            f"{SEED_RID}/seeded-request-not-reproducible",
            evidence,
            ctx.seed,
            [exchange for exchange in requests_since(engine, shown_from) if not exchange["body"].get("stream")],
        ),
        finding=SEED_RID,
    )
    tally.blocked(own, SEED_RID, f"{request} is not reproducible sent alone, nor without its budget")
    found.attributed = True
    return found
