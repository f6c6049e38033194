"""A catalogue of checks with known outcomes, for the runner's scoring tests."""

import os
import time
from pathlib import Path

from specconform.harness.core import Check, Outcome, RequirementResult, Tally


def _pass(engine, ctx):
    tally = Tally(("TB-FORCE-1",))
    tally.exercised("TB-FORCE-1")
    return tally.outcome("one case")


def _fail(engine, ctx):
    tally = Tally(("TB-FORCE-1", "TB-FORCE-2"))
    tally.violated("TB-FORCE-1", "left-a-forced-row-free", "row 0 free, expected 7")
    return tally.outcome("stopped at the first case")


def _misspelt(engine, ctx):
    tally = Tally(("TB-FORCE-1",))
    tally.violated("TB-FORSE-1", "left-a-forced-row-free", "row 0 free, expected 7")
    return tally.outcome("stopped at the first case")


def _crash(engine, ctx):
    raise RuntimeError("engine exploded")


def _slow(engine, ctx):
    time.sleep(60)  # only ever ended by the runner's deadline
    return Outcome("PASS", "", {"TB-FORCE-1": RequirementResult("PASS", 1)})


def _interrupted(engine, ctx):
    raise KeyboardInterrupt


RENDEZVOUS = "SPECCONFORM_TEST_RENDEZVOUS"  # a folder where each ``meet`` check leaves its process id


def _meet(engine, ctx):
    """Passes once two engine processes are inside a ``meet`` check at once (each waits for the other, up to a
    minute): a serial run cannot pass two of them."""
    folder = Path(os.environ[RENDEZVOUS])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    met = len(list(folder.iterdir()))
    status = "PASS" if met >= 2 else "FAIL"
    return Outcome(status, f"{met} engine processes met", {"TB-FORCE-1": RequirementResult(status, 1)})


def checks():
    def check(name, run, cls="tb.core", needs=("budget",), requirements=("TB-FORCE-1",)):
        return Check(name, cls, requirements, needs, "test check", run)

    return [
        check("pass", _pass),
        check("fail", _fail, requirements=("TB-FORCE-1", "TB-FORCE-2")),
        check("unclaimed", _pass, cls="tb.scope.section"),
        check("precondition", _pass, needs=("budget", "counting")),
        check("misspelt", _misspelt),
        check("crash", _crash),
        check("slow", _slow),
        check("interrupted", _interrupted),
        check("meet", _meet),
        check("meet-again", _meet),
    ]
