"""The parent's side of judging: one forked child per job, at most ``workers`` at a time, killed when a
check runs past its limit.

A parent process that has imported the project and its libraries (torch, NumPy, SciPy, Hypothesis) forks
one child per mutant: the child applies the mutant (``apply``: its function's code replaced in place, or
the project imported again with the mutated file served by an import hook), builds the engine and runs the
checks in order until the first that is not passed (``child``). The parent reads the child's events from a
pipe and kills it when a check runs past its limit (TIMEOUT). So a mutant costs its checks, not an
interpreter and torch import.

Why this pool is our own and not pebble's ``ProcessPool`` (whose ``timeout=`` kills a task's worker):
pebble's limit is per task and fixed when the task is scheduled, while here a child's deadline moves with
its progress: a check's start sets it to that check's own limit (``--timeout`` plus ``--timeout-factor``
times its baseline seconds), its result back to ``Setup.start_limit_s``. And a child that is killed or
dies still gets a verdict from what it said before: the checks it passed, the check it was running (which
its TIMEOUT or ERROR names, with that check's requirements, and where the re-judging starts) and, for a
baseline, the lines each check executed; pebble gives back a task's return value or its exception
(``TimeoutError``, ``ProcessExpired``) and nothing of what the task did before. Each check as a pebble
task of a one-worker pool per mutant would give per-check limits, but would keep the child's state (the
mutated modules, the engine, the tracer) in module globals between tasks, and pebble forks a replacement
worker from its manager thread while its other threads run, where this pool forks from the main thread of
a parent that starts no threads. What is left here is ``os.fork``, a pipe per child and ``select``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field

from specconform.harness.mutation.child import run_child
from specconform.harness.mutation.jobs import KILLING, Job, Setup, Verdict


@dataclass
class _Running:
    job: Job
    pid: int
    fd: int
    started: float
    deadline: float
    current: str | None = None
    pending: bytes = b""
    events: list[dict] = field(default_factory=list)


def _fork(job: Job, setup: Setup) -> _Running:
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            out = os.fdopen(write_fd, "w")

            def send(**event):
                out.write(json.dumps(event) + "\n")
                out.flush()

            run_child(job, setup, send)
            send(event="done")
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    now = time.monotonic()
    return _Running(job, pid, read_fd, now, now + setup.start_limit_s)


def _receive(child: _Running, data: bytes, setup: Setup) -> None:
    """Take the child's events from ``data``; a check's start sets the deadline to its limit."""
    *lines, child.pending = (child.pending + data).split(b"\n")
    for line in lines:
        event = json.loads(line)
        child.events.append(event)
        if event["event"] == "start":
            child.current = event["check"]
            child.deadline = time.monotonic() + child.job.limits.get(child.current, setup.check_limit_s)
        elif event["event"] == "result":
            child.current = None
            child.deadline = time.monotonic() + setup.start_limit_s


def _finish(child: _Running, timed_out: bool, setup: Setup) -> None:
    """The verdict from the child's events: the first check that was not passed kills the mutant; a child
    killed at its deadline is a TIMEOUT of the check it was running, one that died without a result an
    ERROR of it (before any check: of the first)."""
    job, events = child.job, child.events
    job.plan = next((e["checks"] for e in events if e["event"] == "plan"), job.plan)
    results = [e for e in events if e["event"] == "result"]
    job.seconds = {e["check"]: e["seconds"] for e in results if "seconds" in e}
    job.lines = next((e["lines"] for e in events if e["event"] == "lines"), {})
    ran = (len(results), len(job.plan) if job.checks is None else len(job.checks))
    killer = next((e for e in results if e["status"] in KILLING), None)
    if killer is not None:
        check = killer["check"] or ""
        requirements = killer["violated"] or job.plan.get(check, [])
        job.verdict = Verdict("KILLED", check, killer["status"], requirements, killer["message"], *ran)
    elif timed_out or not any(e["event"] == "done" for e in events):
        current = child.current or (job.checks[0] if job.checks and not results else "")
        if timed_out:
            limit = job.limits.get(current, setup.check_limit_s) if child.current else setup.start_limit_s
            status, message = "TIMEOUT", f"ran past {limit:.3g} s; the child was killed"
        else:
            status, message = "ERROR", f"the child ended during {current or 'the import'} without a result"
        job.verdict = Verdict("KILLED", current, status, job.plan.get(current, []), message, *ran)
    else:
        job.verdict = Verdict("SURVIVED", checks_run=ran[0], checks_planned=ran[1])
    job.verdict.seconds = round(time.monotonic() - child.started, 1)


def judge(jobs: list[Job], setup: Setup, workers: int = 1, on_done=lambda job: None) -> list[Job]:
    """Judge every job, at most ``workers`` children at a time; each job gets its ``verdict`` (and its
    ``plan``, ``seconds`` and ``lines``). ``on_done(job)`` is called as each one finishes."""
    queue = list(reversed(jobs))
    running: dict[int, _Running] = {}

    def end(child: _Running, timed_out: bool) -> None:
        if timed_out:
            os.kill(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)
        os.close(child.fd)
        del running[child.fd]
        _finish(child, timed_out, setup)
        on_done(child.job)

    while queue or running:
        while queue and len(running) < workers:
            child = _fork(queue.pop(), setup)
            running[child.fd] = child
        wait = max(0.0, min(c.deadline for c in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], wait)
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if data:
                _receive(running[fd], data, setup)
            else:
                end(running[fd], timed_out=False)
        now = time.monotonic()
        for child in [c for c in running.values() if now >= c.deadline]:
            end(child, timed_out=True)
    return jobs
