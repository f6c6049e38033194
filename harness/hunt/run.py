"""A hunt on one device (``hunt_on_device``) and across devices (``hunt``): one engine process per GPU, each with
its own rows and seeds, launches until its share of the draws is made or its time is spent.

Launches run back to back without reading anything back; the host reads the draws once per round of launches
(``ROUND``) to know when to stop, and the tallies once at the end. A violation's launch is run again to show what
the engine emitted and to write the request's reproduction.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue as queues
import time
import traceback
from dataclasses import dataclass

from ..core import UsageError
from ..isolation import device_name
from .attribution import scheme_of
from .invariants import INVARIANTS, DeviceTally, request_violations
from .launchers import hunt_device, launcher_for
from .record import CONFIDENCE, DeviceRun, HuntRecord, InvariantResult, Violation, missed_rate
from .replay import minimal_case, replay_alone
from .rows import HuntRows, build_rows

ROUND = 64  # the most launches between two readings of the draws
# drafts with q(d) = 0: a contract declaring drafts-sampled-from-q excludes the requests holding one (contract.py)
Q_ZERO_PRECONDITION = "draft-outside-q-support"
DEVICE_SEED_STRIDE = 1_000_003  # device d builds its rows and seeds from seed + d * DEVICE_SEED_STRIDE


@dataclass(frozen=True)
class HuntOptions:
    """What a hunt runs: the ``engine`` (``make_engine``'s name), ``draws`` in all (split between the devices),
    logits ``rows`` per launch, the vocabulary size, the ``seed`` of rows and draws, and the seconds each device may
    spend launching (``max_seconds``: it stops at the round that passes them, with fewer draws)."""

    engine: str
    draws: int
    rows: int
    vocab: int
    seed: int
    max_seconds: float

    def __post_init__(self) -> None:
        for name in ("draws", "rows", "vocab"):
            if getattr(self, name) < (2 if name == "vocab" else 1):
                raise ValueError(f"HuntOptions.{name} must be positive (vocab at least 2); got {getattr(self, name)}")
        if not self.max_seconds > 0:
            raise ValueError(f"HuntOptions.max_seconds must be > 0; got {self.max_seconds}")


def request_case(rows: HuntRows, request: int, seed: int | None, one_hot: bool):
    """Request ``request`` of ``rows`` alone as a canonical ``RejectionCase`` with its ``seed`` and position."""
    import numpy as np

    from specconform.specs.interface import RejectionCase

    k = int(rows.num_draft_tokens[request])
    first_row = int((rows.num_draft_tokens[:request] + 1).sum())
    first_draft = first_row - request
    row_slice, draft_slice = slice(first_row, first_row + k + 1), slice(first_draft, first_draft + k)
    return RejectionCase(
        target_logits=rows.target_logits[row_slice].double().cpu().numpy(),
        draft_token_ids=rows.draft_token_ids[draft_slice].cpu().numpy(),
        num_draft_tokens=np.array([k]),
        temperature=rows.temperature[request : request + 1].double().cpu().numpy(),
        draft_probs=None if one_hot else rows.draft_probs[draft_slice].double().cpu().numpy(),
        forced_token_ids=rows.forced_token_ids[row_slice].cpu().numpy(),
        seeds=None if seed is None else np.array([seed]),
        positions=rows.positions[request : request + 1].cpu().numpy(),
    )


def _violation(engine, launcher, rows: HuntRows, invariant: str, code: int, device: str) -> Violation:
    """The first violation of ``invariant`` (``code``: launch * R + row), its launch run again, and the request
    replayed alone through the engine's canonical entry point where its draws are the request's own, then shrunk
    there (``minimal_case``)."""
    from ..vectors.codec import case_json

    launch, row = divmod(code, rows.num_rows)
    request = int(rows.row_request[row])
    one_hot = launch % 2 == 1
    tokens, num = launcher.launch(launch, one_hot)
    token_ids, num_emitted = [int(t) for t in tokens[request].tolist()], int(num[request])
    seeds = launcher.request_seeds(launch)
    seed = None if seeds is None else int(seeds[request])
    case = request_case(rows, request, seed, one_hot)
    reproduced = invariant in request_violations(case, token_ids, num_emitted, one_hot)
    replayed_alone = launcher.replays_one_request and invariant in replay_alone(engine, case, one_hot)[1]
    minimal = minimal_case(engine, case, invariant, one_hot) if replayed_alone else None
    return Violation(
        invariant=invariant,
        device=device,
        launch=launch,
        request=request,
        row=int(rows.row_local[row]),
        seed=seed,
        position=int(rows.positions[request]),
        case=case_json(case),
        token_ids=token_ids,
        num_emitted=num_emitted,
        replayed_alone=replayed_alone,
        reproduced=reproduced,
        minimal=minimal,
    )


def _launches(launcher, tally: DeviceTally, target: int, max_seconds: float) -> tuple[int, int, float]:
    """Launch until ``target`` draws or ``max_seconds``: ``(draws, launches, seconds)``. Launch ``i`` is one-hot
    when ``i`` is odd, with draft probabilities when even."""
    start, launches, draws = time.perf_counter(), 0, 0
    per_launch = seconds_per_launch = 0.0
    while draws < target:
        elapsed = time.perf_counter() - start
        if launches and elapsed >= max_seconds:
            break
        if not launches:
            batch = 2  # one launch of each kind: the first reading sizes the rounds
        else:
            batch = math.ceil((target - draws) / per_launch) if per_launch else ROUND
            batch = min(batch, ROUND, max(1, int((max_seconds - elapsed) / seconds_per_launch)))
        for _ in range(batch):
            one_hot = launches % 2 == 1
            tokens, num = launcher.launch(launches, one_hot)
            tally.observe(tokens, num, launches, one_hot)
            launches += 1
        draws = tally.draws_now()
        per_launch = draws / launches
        seconds_per_launch = (time.perf_counter() - start) / launches
    return draws, launches, time.perf_counter() - start


def hunt_on_device(options: HuntOptions, device_index: int, target: int, gpu: int | None = None) -> dict:
    """``target`` draws of ``options.engine`` on the device this process sees, as a plain dict (it crosses
    processes): ``name``, ``version``, ``run`` (a ``DeviceRun``), ``tally`` (``DeviceTally.read``), ``outside``
    (the invariants the engine's contract leaves unjudged, with why), ``violations`` (the first of each
    invariant) and ``scheme`` (the draws the oracle judges them under). ``gpu``: the GPU's index on the machine,
    where this process sees that one alone."""
    from ..adapters import make_engine

    engine = make_engine(options.engine)
    device = hunt_device(engine)
    if gpu is not None and not device.startswith("cuda"):
        raise UsageError(
            f"engine {options.engine!r} runs on {device}, not on GPU {gpu}: name its CUDA form "
            "(reference:cuda) or pass --devices cpu"
        )
    label = device_name(device) if gpu is None else f"GPU {gpu} ({device_name(device)})"
    seed = options.seed + device_index * DEVICE_SEED_STRIDE
    setup_start = time.perf_counter()
    rows = build_rows(options.rows, options.vocab, seed, device)
    launcher = launcher_for(engine, rows, seed)
    outside = engine.profile.outside_contract({Q_ZERO_PRECONDITION}) or ""
    tally = DeviceTally(rows, q_zero_outside=bool(outside))
    tally.draws_now()  # the rows are built before the launches are timed
    setup_seconds = time.perf_counter() - setup_start
    draws, launches, seconds = _launches(launcher, tally, target, options.max_seconds)
    read = tally.read()
    violations = [
        _violation(engine, launcher, rows, name, result["first"], label)
        for name, result in read["invariants"].items()
        if result["first"] is not None
    ]
    return {
        "name": engine.name,
        "version": engine.version,
        "run": DeviceRun(label, draws, launches, rows.num_rows, seconds, setup_seconds),
        "tally": read,
        "outside": {"q-zero-draft-rejected": outside} if outside else {},
        "violations": violations,
        "scheme": scheme_of(engine.profile),
    }


def _device_process(queue, options: HuntOptions, device_index: int, target: int, gpu: int) -> None:
    """A device's process: its result, or why it ended (a usage error's message, else the traceback), onto
    ``queue`` as ``(device_index, result, error, usage)``."""
    try:
        queue.put((device_index, hunt_on_device(options, device_index, target, gpu), "", False))
    except UsageError as exc:
        queue.put((device_index, None, str(exc), True))
    except Exception:  # the parent reports it with the device it happened on
        queue.put((device_index, None, traceback.format_exc(), False))


def _across_processes(options: HuntOptions, gpus: list[int]) -> list[dict]:
    """One spawned process per GPU index in ``gpus``, each seeing that GPU alone (``CUDA_VISIBLE_DEVICES``)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    share = -(-options.draws // len(gpus))
    processes, visible = [], os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        for n, gpu in enumerate(gpus):
            os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # a spawned child starts with the parent's environment
            process = context.Process(target=_device_process, args=(queue, options, n, share, gpu), daemon=True)
            process.start()
            processes.append(process)
    finally:
        if visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
    results: dict[int, dict] = {}
    errors: list[str] = []
    usage: list[bool] = []
    while len(results) + len(errors) < len(gpus):
        if not any(p.is_alive() for p in processes) and queue.empty():
            errors.append(f"a device's process ended without a result (exit codes {[p.exitcode for p in processes]})")
            break
        try:
            index, result, error, is_usage = queue.get(timeout=1.0)
        except queues.Empty:
            continue
        if error:
            errors.append(f"GPU {gpus[index]}: {error}")
            usage.append(is_usage)
        else:
            results[index] = result
    for process in processes:
        process.join()
    if errors and all(usage) and len(usage) == len(errors):
        raise UsageError("; ".join(errors))
    if errors:
        raise RuntimeError("hunt failed: " + "\n".join(errors))
    return [results[i] for i in range(len(gpus))]


def hunt(options: HuntOptions, gpus: list[int] | None) -> HuntRecord:
    """The hunt's record: on the GPUs ``gpus`` (a process each), or in this process where ``gpus`` is None."""
    parts = _across_processes(options, gpus) if gpus else [hunt_on_device(options, 0, options.draws)]
    draws = sum(p["run"].draws for p in parts)
    invariants = []
    for inv in INVARIANTS:
        opportunities = sum(p["tally"]["invariants"][inv.name]["opportunities"] for p in parts)
        violations = sum(p["tally"]["invariants"][inv.name]["violations"] for p in parts)
        invariants.append(
            InvariantResult(
                inv.name,
                inv.requirement,
                inv.says,
                opportunities,
                violations,
                missed_rate(opportunities, violations),
                parts[0]["outside"].get(inv.name, ""),
            )
        )
    return HuntRecord(
        engine=parts[0]["name"],
        version=parts[0]["version"],
        vocab_size=options.vocab,
        seed=options.seed,
        draws=draws,
        seconds=max(p["run"].seconds for p in parts),
        confidence=CONFIDENCE,
        bound=missed_rate(draws, sum(inv.violations for inv in invariants)),
        devices=[p["run"] for p in parts],
        invariants=invariants,
        violations=[v for p in parts for v in p["violations"]],
        engine_spec=options.engine,
        scheme=parts[0]["scheme"],
    )
