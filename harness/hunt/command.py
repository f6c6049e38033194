"""``specconform hunt``: a rare-event hunt of one engine, its record written into a report folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core import UsageError


def _count(text: str) -> int:
    """An argparse type: a positive whole number, written as an integer or in exponent form (``1e9``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1000000 or 1e6, got {text!r}") from None
    if not value >= 1 or value != int(value) or value > 2**62:
        raise argparse.ArgumentTypeError(f"must be a whole number in [1, 2^62], got {text}")
    return int(value)


def gpus_of(text: str) -> list[int] | None:
    """``--devices``: ``auto`` (every CUDA GPU torch sees, else this process on the CPU), ``cpu``, or GPU indices
    separated by commas; None means one run in this process."""
    if text == "cpu":
        return None
    if text == "auto":
        import torch

        return list(range(torch.cuda.device_count())) or None
    try:
        gpus = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"--devices {text!r}: expected auto, cpu or GPU indices such as 0,1") from None
    if len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise UsageError(f"--devices {text!r}: GPU indices must be distinct and >= 0")
    return gpus


def replay_record(record: str, engine_spec: str) -> int:
    """``--replay``: each violation of the hunt record ``record`` replayed alone through ``engine_spec``; 1 where one
    still breaks its invariant, else 0."""
    from ..adapters import make_engine
    from .replay import replay

    engine = make_engine(engine_spec)
    replays = replay(record, engine)
    for n, result in enumerate(replays):
        verdict = "REPRODUCED" if result.reproduced else "not reproduced"
        print(
            f"violations[{n}] {result.invariant}: recorded {result.recorded}, {engine.name} emits {result.emitted}: "
            f"{verdict} (breaks {', '.join(result.violations) or 'nothing'})"
        )
    return 1 if any(r.reproduced for r in replays) else 0


def render_records(records: list[str], report_dir: str | None, engine_spec: str | None) -> int:
    """``--render``: each hunt record's Markdown written again into ``report_dir`` from its JSON, its violations
    attributed by their cases; nothing runs an engine (``engine_spec``, where given, names it in the replay commands
    of records that do not). 1 where a record holds a finding, else 0."""
    from .record import record_from_json, render

    if report_dir is None:
        raise UsageError("specconform hunt --render needs --report-dir (where hunt-<engine>.md is written)")
    for path in render(records, report_dir, engine_spec or ""):
        print(f"wrote {path}", file=sys.stderr)
        print(path.read_text(), end="")
    return 1 if any(record_from_json(json.loads(Path(r).read_text())).violated for r in records) else 0


def cmd_hunt(args) -> int:
    from ..adapters import check_engine_spec, require_extra
    from . import HuntOptions, hunt, write_record

    if args.render:
        return render_records(args.render, args.report_dir, args.engine)
    if not args.engine:
        raise UsageError("specconform hunt needs --engine (or --render RECORD... to render records again)")
    require_extra("reference", "specconform hunt")
    check_engine_spec(args.engine)
    if args.replay:
        return replay_record(args.replay, args.engine)
    if args.report_dir is None:
        raise UsageError("specconform hunt needs --report-dir (or --replay RECORD to replay a record's violations)")
    options = HuntOptions(args.engine, args.draws, args.rows, args.vocab, args.seed, args.max_seconds)
    record = hunt(options, gpus_of(args.devices))
    json_path, markdown_path = write_record(record, args.report_dir)
    for run in record.devices:
        print(
            f"{run.device}: {run.draws:,} draws in {run.launches} launches of {run.rows_per_launch:,} rows, "
            f"{run.seconds:.1f} s (rows built in {run.setup_seconds:.1f} s)"
        )
    for inv in record.invariants:
        if inv.outside:
            print(f"  {inv.name:24} {inv.requirement:11} not judged: outside the engine's contract ({inv.outside})")
            continue
        print(
            f"  {inv.name:24} {inv.requirement:11} {inv.opportunities:>15,} judged  {inv.violations:>12,} violated  "
            f"bound {inv.bound:.3g}"
        )
    for finding in record.findings(json_path):
        print(f"  finding {finding.line()}")
    for violation in record.violations:
        print(
            f"  first {violation.invariant} on {violation.device}: launch {violation.launch}, request "
            f"{violation.request}, row {violation.row}, seed {violation.seed}, position {violation.position}, "
            f"emitted {violation.token_ids[: violation.num_emitted]} (reproduced: {violation.reproduced}, "
            f"alone: {violation.replayed_alone})"
        )
    print(record.markdown_line())
    print(f"wrote {json_path} and {markdown_path}", file=sys.stderr)
    return 1 if record.violated else 0


def add_hunt_parser(sub) -> None:
    """``specconform hunt``: invariants of every draw over many draws of an engine's rejection sampler."""
    hunt = sub.add_parser(
        "hunt",
        help="hunt rare violations of the invariants of every draw (q(d) = 0 and p(d) = 0 drafts rejected, "
        "emitted ids in the support and in [0, V), forced rows) over many draws; exit 1 if one is found",
    )
    hunt.add_argument(
        "--engine",
        help="the engine (with --render: the spec the replay commands name where a record does not keep it), "
        "as for run: reference:cuda, a zoo mutant built "
        "on the reference, or module:factory (vLLM's adapters)",
    )
    hunt.add_argument(
        "--draws",
        type=_count,
        default=10**9,
        help="draws in all, split between the devices (a draw: one row the engine decided)",
    )
    hunt.add_argument("--rows", type=_count, default=10**6, help="logits rows per launch (at least this many)")
    hunt.add_argument(
        "--vocab", type=_count, default=1025, help="the vocabulary size V (1025: the last id alone in a tile of 1024)"
    )
    hunt.add_argument("--seed", type=int, default=20261129, help="the seed of the rows and of every launch's draws")
    hunt.add_argument(
        "--max-seconds",
        type=float,
        default=120.0,
        help="each device stops launching once its launches pass this many seconds, whatever its draws",
    )
    hunt.add_argument(
        "--devices",
        default="auto",
        help="auto (every GPU, one engine process each; else the CPU in this process), cpu, or GPU indices such as 0,1",
    )
    hunt.add_argument("--report-dir", help="the folder of hunt-<engine>.json and hunt-<engine>.md")
    hunt.add_argument(
        "--replay",
        metavar="RECORD",
        help="instead of hunting: replay each violation of this hunt record (hunt-<engine>.json) alone through "
        "--engine; exit 1 if one still breaks its invariant",
    )
    hunt.add_argument(
        "--render",
        nargs="+",
        metavar="RECORD",
        help="instead of hunting: write hunt-<engine>.md into --report-dir again from these hunt records (JSON), "
        "each violation attributed by its case (no engine runs); exit 1 if one holds a finding",
    )
    hunt.set_defaults(func=cmd_hunt)
