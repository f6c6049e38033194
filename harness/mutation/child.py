"""The forked child's side of a judgement: apply the mutant, build the engine, run the checks in order
(their lines traced when asked) and report each step as an event."""

from __future__ import annotations

import importlib
import time

from specconform.harness.mutation.apply import patch_in_place, reimport
from specconform.harness.mutation.jobs import IMPORT, KILLING, Job, Setup

_CATALOGUES: dict[str, dict] = {}  # built once in the parent (it parses the requirements for each check)


def catalogue_by_name(spec: str, fresh: bool = False) -> dict:
    """The checks by name of the catalogue ``spec`` (``module:function``); ``fresh``: built again from the
    modules imported now, not taken from the parent's."""
    if fresh or spec not in _CATALOGUES:
        module_name, _, function = spec.partition(":")
        _CATALOGUES[spec] = {c.name: c for c in getattr(importlib.import_module(module_name), function)()}
    return _CATALOGUES[spec]


def run_child(job: Job, setup: Setup, send) -> None:
    """(In the forked child) apply ``job.mutant`` (its function's code patched in place, or the project
    imported again), build the engine and run the checks, reporting each as an event: ``plan``, ``start``,
    ``result``, ``lines``."""
    tracer = None
    if job.trace:
        import coverage

        tracer = coverage.Coverage(data_file=None, include=list(job.trace), config_file=False)
        tracer.start()
        tracer.switch_context(IMPORT)
    reimported = job.mutant is None or not patch_in_place(job.mutant, setup.source_root)
    if reimported:
        reimport(job.mutant, setup.source_root)
    if setup.max_cases:  # the first cases of each check's seeded sequence, the simplest first
        cases = importlib.import_module("specconform.harness.cases")
        every = cases.draw
        cases.draw = lambda strategy, case_seed, count: every(strategy, case_seed, min(count, setup.max_cases))
    first = job.checks[0] if job.checks else None
    try:
        catalogue = catalogue_by_name(setup.catalogue, fresh=reimported)
        config = importlib.import_module("specconform.harness.config")
        core = importlib.import_module("specconform.harness.core")
        engine = importlib.import_module("specconform.harness.adapters").make_engine(job.engine)
    except BaseException as exc:  # the mutated import or factory: the first check cannot run
        send(event="result", check=first, status="ERROR", violated=[], message=f"{type(exc).__name__}: {exc}")
        return
    profile = engine.profile
    names = job.checks
    if names is None:
        names = [c.name for c in config.select(catalogue.values(), (), setup.exclude)]
    runnable = [
        n for n in names if profile.claims(catalogue[n].cls) and set(catalogue[n].needs) <= profile.capabilities
    ]
    send(event="plan", checks={n: list(catalogue[n].requirements) for n in runnable})
    ctx = core.Context(profile=profile, seed=setup.seed, trials=setup.trials)
    for name in runnable:
        send(event="start", check=name)
        if tracer:
            tracer.switch_context(name)
        started = time.perf_counter()
        try:
            outcome = catalogue[name].run(engine, ctx)
            status, violated, message = outcome.status, list(outcome.violated), outcome.message
        except BaseException as exc:  # a crash (SystemExit included) is not a spec violation: ERROR
            status, violated, message = "ERROR", [], f"{type(exc).__name__}: {exc}"
        send(
            event="result",
            check=name,
            status=status,
            violated=violated,
            message=(message.splitlines() or [""])[0][:300],
            seconds=round(time.perf_counter() - started, 3),
        )
        if job.checks is not None and status in KILLING:
            break
    if tracer:
        tracer.stop()
        data = tracer.get_data()
        send(event="lines", lines={f: _by_context(data.contexts_by_lineno(f)) for f in data.measured_files()})


def _by_context(contexts_by_line: dict[int, list[str]]) -> dict[str, list[int]]:
    by_context: dict[str, list[int]] = {}
    for line, contexts in sorted(contexts_by_line.items()):
        for context in contexts:
            by_context.setdefault(context, []).append(line)
    return by_context
