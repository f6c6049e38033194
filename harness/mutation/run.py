"""A whole run: the mutants chosen, the unmutated code judged (its lines traced), each mutant judged by
the checks that execute its lines, TIMEOUTs re-judged, and ``mutants.jsonl``, ``run.json`` and
``summary.md`` written."""

from __future__ import annotations

import importlib
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from specconform.harness.mutation.apply import module_of
from specconform.harness.mutation.child import catalogue_by_name
from specconform.harness.mutation.jobs import IMPORT, Job, Setup, Verdict
from specconform.harness.mutation.mutator import Mutant, mutants_of
from specconform.harness.mutation.pool import judge
from specconform.harness.mutation.summary import load_classified, read_mutants, report
from specconform.harness.mutation.targets import FAST_EXCLUDE, REPO, TARGETS, Target


def sample(mutants: list[Mutant], fraction: float, seed: int) -> list[Mutant]:
    """A deterministic sample of ``fraction`` of the mutants, stratified by file and operator."""
    if fraction >= 1:
        return mutants
    strata: dict[tuple, list[Mutant]] = {}
    for m in mutants:
        strata.setdefault((m.path, m.operator), []).append(m)
    chosen = []
    for key, group in sorted(strata.items()):
        rng = random.Random(f"{seed}:{key}")
        chosen += rng.sample(group, max(1, round(len(group) * fraction)))
    return sorted(chosen, key=lambda m: (m.path, m.start, m.operator, m.replacement))


def _preload(setup: Setup, targets) -> None:
    """Import the project's modules and their libraries in the parent, once: every forked child starts
    with torch, NumPy, SciPy and Hypothesis loaded, on one thread each."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in ("specconform.harness.adapters", *(module_of(t.path) for t in targets)):
        importlib.import_module(name)
    catalogue_by_name(setup.catalogue)


def plan_mutant(target: Target, mutant: Mutant, baseline: Job, source: str, args) -> Job:
    """The checks that can tell ``mutant`` from the original: those of the baseline run that executed one
    of its lines (all of them if the import or the engine's factory did), the mutated code's own area
    first, each group cheapest first (by the baseline's seconds); each with the limit
    ``args.timeout + args.timeout_factor × its baseline seconds``. A check that never executes the
    mutated lines runs exactly as on the original, so it cannot kill the mutant."""
    covered = baseline.lines.get(str(REPO / target.path), {})
    span = set(mutant.lines(source))
    executing = {context for context, lines in covered.items() if span & set(lines)}
    checks = [c for c in baseline.plan if IMPORT in executing or c in executing]
    area = target.area(mutant.function)
    checks.sort(key=lambda c: (not any(r.startswith(area) for r in baseline.plan[c]), baseline.seconds[c]))
    limits = {c: args.timeout + args.timeout_factor * baseline.seconds[c] for c in checks}
    return Job(target.engine, mutant, checks, limits, plan={c: baseline.plan[c] for c in checks})


def _entry(target: Target, job: Job, source: str) -> dict:
    mutant, verdict = job.applied, job.judged
    entry = {k: v for k, v in asdict(mutant).items() if k not in ("start", "end")}
    entry.update(asdict(verdict), engine=target.engine, area=target.area(mutant.function), diff=mutant.diff(source))
    return entry


def _choose(args, targets: list[Target], sources: dict[str, str]) -> tuple[list[tuple[Target, Mutant]], int, set]:
    """The mutants to judge, how many the targets have and the keys asked for (``--key``, and the survivors
    of ``--survivors-of``): the mutants with those keys, else a ``--fraction`` sample, less those that
    ``--skip-judged`` judged. Each file's mutants come in a seeded random order, the files interleaved: a run
    stopped early has judged a random sample of each file's mutants."""
    planned: list[tuple[Target, Mutant]] = []
    generated = 0
    judged = {entry["key"] for run_dir in args.skip_judged or () for entry in read_mutants(Path(run_dir))}
    keys = set(args.key or ()) | {
        entry["key"]
        for run_dir in args.survivors_of or ()
        for entry in read_mutants(Path(run_dir))
        if entry["status"] != "KILLED"
    }
    for target in targets:
        mutants = mutants_of(sources[target.path], target.path, target.skip)
        mutants = [m for m in mutants if not args.operator or m.operator in args.operator]
        generated += len(mutants)
        chosen = [m for m in mutants if m.key in keys] if keys else sample(mutants, args.fraction, args.seed)
        planned += [(target, m) for m in chosen if m.key not in judged]
    random.Random(f"{args.seed}:order").shuffle(planned)
    per_file = Counter(target.path for target, _ in planned)
    seen: Counter = Counter()
    position = []
    for target, _ in planned:
        seen[target.path] += 1
        position.append(seen[target.path] / per_file[target.path])
    planned = [pair for _, pair in sorted(zip(position, planned), key=lambda item: item[0])]
    return planned, generated, keys


def run(args) -> int:
    """Judge the mutants that ``args`` (``python -m specconform.harness.mutation run``) chooses and write the run's
    folder; 1 when the unmutated code fails a check (nothing is judged then), else 0."""
    classified = load_classified(Path(args.equivalent))
    targets = [t for t in TARGETS if not args.target or t.path in args.target]
    setup = Setup(
        REPO, exclude=FAST_EXCLUDE + tuple(args.exclude or ()), seed=args.seed, trials=args.trials, max_cases=args.cases
    )
    sources = {t.path: (REPO / t.path).read_text() for t in targets}
    planned, generated, keys = _choose(args, targets, sources)
    out = Path(args.report_dir) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    started = time.monotonic()
    _preload(setup, targets)
    log = (out / "log.txt").open("w")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)
        log.write(text + "\n")
        log.flush()

    # The unmutated code, every check, its lines traced: it must pass them all, or no kill means anything.
    engines = sorted({t.engine for t in targets})
    trace = {e: tuple(str(REPO / t.path) for t in targets if t.engine == e) for e in engines}
    baselines = {job.engine: job for job in judge([Job(e, trace=trace[e]) for e in engines], setup, args.workers)}
    for engine, job in baselines.items():
        say(f"baseline {engine}: {job.judged.status} in {job.judged.seconds} s, {len(job.plan)} checks")
    broken = {e: asdict(job.judged) for e, job in baselines.items() if job.judged.status != "SURVIVED"}
    if broken:
        say(f"the unmutated code fails a check, so this run judges nothing: {broken}")
        return 1
    jobs = [plan_mutant(t, m, baselines[t.engine], sources[t.path], args) for t, m in planned]
    target_of = {id(job): target for job, (target, _) in zip(jobs, planned)}
    say(f"{len(planned)} of {generated} mutants to judge; results in {out}")
    done = 0
    sink = (out / "mutants.jsonl").open("w")  # as they are judged; written again after the re-judging

    def report_one(job: Job) -> None:
        nonlocal done
        done += 1
        sink.write(json.dumps(_entry(target_of[id(job)], job, sources[job.applied.path])) + "\n")
        sink.flush()
        v = job.judged
        killer = f"  <- {v.check} {v.check_status} {','.join(v.requirements)}" if v.check else ""
        ran = f"{v.checks_run}/{v.checks_planned}"
        say(f"[{done}/{len(jobs)}] {v.status:8} {v.seconds:6.1f} s {ran:>5} {job.applied.key}{killer}")

    judge([j for j in jobs if j.checks], setup, args.workers, report_one)
    for job in jobs:
        if not job.checks:
            job.verdict = Verdict("SURVIVED", message="no check executes the mutated lines")
    # A TIMEOUT on a loaded machine is not a kill until the check runs past a limit ``--rejudge`` times longer.
    slow = [job for job in jobs if job.judged.check_status == "TIMEOUT"]
    if slow:
        say(f"re-judging {len(slow)} TIMEOUT(s) with {args.rejudge:g} times the limits")
        first_verdicts = {id(job): job.judged for job in slow}
        for job in slow:
            checks = job.checks or []  # a mutant's job names its checks (plan_mutant)
            job.checks = checks[checks.index(job.judged.check) :]  # the checks before it passed
            job.limits = {c: args.rejudge * limit for c, limit in job.limits.items()}
        done = 0
        judge(slow, setup, args.workers, report_one)
        for job in slow:
            first = first_verdicts[id(job)]
            job.judged.message = f"(re-judged after a TIMEOUT at {first.check}: {first.message}) " + job.judged.message
    sink.close()
    with (out / "mutants.jsonl").open("w") as sink:
        for job in jobs:
            sink.write(json.dumps(_entry(target_of[id(job)], job, sources[job.applied.path])) + "\n")
    meta = {
        "started": out.name,
        "machine": f"{os.cpu_count()} CPU cores (load average {os.getloadavg()[0]:.1f} at the end)",
        "seconds": time.monotonic() - started,
        "workers": args.workers,
        "generated": generated,
        "sampling": f"the mutants named by --key or --survivors-of ({len(planned)})"
        if keys
        else f"a {args.fraction:.0%} sample stratified by file and operator, seed {args.seed}"
        if args.fraction < 1
        else "all of them",
        "exclude": list(setup.exclude),
        "trials": setup.trials,
        "max_cases": setup.max_cases,
        "limits": f"{args.timeout:g} s + {args.timeout_factor:g} × the baseline's seconds per check; "
        f"TIMEOUTs re-judged at {args.rejudge:g} times that",
        "baselines": {
            e: {"status": j.judged.status, "seconds": j.judged.seconds, "checks": j.seconds}
            for e, j in baselines.items()
        },
    }
    (out / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(report([out], classified))
    return 0
