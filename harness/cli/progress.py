"""What a run says on stderr while it runs: progress over its plan, and the third parties kept quiet."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from .. import console
from ..schemas import RunRecord

# the environment that silences third-party chatter (transformers' logging and its "Loading weights"
# bars, huggingface_hub's bars) in this process and in every engine process it starts
QUIET_ENVIRONMENT = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}

HEARTBEAT_S = 10.0  # without a bar, the longest silence on stderr while a check runs


class Progress:
    """Progress on stderr over ``plan`` (``[(engine spec, check name)]`` in run order): a tqdm bar with
    the running check and an estimate when stderr is a terminal (and ``CI`` is unset); otherwise one
    line per finished check but the NOT_CLAIMED ones, which the closing lines count, and a line every
    ``HEARTBEAT_S`` seconds naming the check still running; nothing when ``quiet``. A check's line says why
    when it did not pass (``console.progress_line``); a terminal keeps those lines above the bar. Use as a
    context manager; call it with each record. With ``workers`` engine processes side by side (``-n``), the checks
    running are the first ``workers`` of the plan not yet finished, which is the order they are handed out in."""

    def __init__(self, plan: list[tuple[str, str]], quiet: bool, stream=None, workers: int = 1):
        self.plan = plan
        self.workers = workers
        self.finished: set[tuple[str, str]] = set()
        self.stream = stream or sys.stderr
        self.enabled = not quiet
        self.done = 0
        self.bar = None
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker = None
        if self.enabled and self.stream.isatty() and not os.environ.get("CI"):
            from tqdm import tqdm

            self.bar = tqdm(total=len(plan), file=self.stream, unit="check", dynamic_ncols=True, disable=False)

    def __enter__(self):
        if self.enabled:
            self._announce()
            self._ticker = threading.Thread(target=self._tick, name="specconform-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()

    def _running(self) -> str:
        running = [entry for entry in self.plan if entry not in self.finished][: self.workers]
        return ", ".join(f"{engine}: {check}" for engine, check in running)

    def _announce(self) -> None:
        """Name the check now running in the bar's postfix (a log hears of it from the heartbeat: a line
        at the start would precede the one line of a usage error found when the engine starts)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._running(), refresh=True)

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _tick(self) -> None:
        """Keep the bar's clock moving, or say every ``HEARTBEAT_S`` which check is still running."""
        last = self.done
        since = time.monotonic()
        interval = 1.0 if self.bar is not None else HEARTBEAT_S
        while not self._stop.wait(interval):
            with self._lock:
                if self.done >= len(self.plan):
                    continue
                if self.bar is not None:
                    self.bar.refresh()
                    continue
                if self.done != last:
                    last, since = self.done, time.monotonic()
                self._line(
                    f"[{self.done}/{len(self.plan)}] still running {self._running()} "
                    f"({time.monotonic() - since:.0f} s; run {time.monotonic() - self.started:.0f} s)"
                )

    def __call__(self, record: RunRecord) -> None:
        with self._lock:
            self.done += 1
            self.finished.add((record.engine_spec, record.check))
            if not self.enabled:
                return
            line = console.progress_line(record, self.done, len(self.plan))
            if self.bar is not None:
                if record.status not in ("PASS", "NOT_CLAIMED"):
                    self.bar.write(line, file=self.stream)  # what needs a look stays on screen
                self.bar.update(1)
                self._announce()
            elif record.status != "NOT_CLAIMED":  # a log says what was judged; the closing lines sum up the rest
                self._line(line)


def quiet_third_parties() -> None:
    """Silence third-party chatter here and in the engine processes started from now on."""
    os.environ.update(QUIET_ENVIRONMENT)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
