"""``specconform export``: a finding as a standalone regression test in the engine's own idiom
(``specconform.harness.export``)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..core import UsageError


def cmd_export(args) -> int:
    """Write the test file (``-o``, default ``test_<engine>_<requirement>.py`` here; ``-`` for stdout)."""
    from .. import export

    if not args.pytest:
        raise UsageError("name the format: --pytest (the only one so far)")
    text, source, idiom = export.export_pytest(args.finding, args.selector or "", args.check or "", args.engine or "")
    for other in source.others:
        print(f"also matched (not exported): {other}", file=sys.stderr)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output) if args.output else export.default_name(source, idiom)
    out.write_text(text)
    print(f"wrote {out}: {source.path} as a pytest test in {idiom}'s idiom")
    return 0


def add_export_parser(sub) -> None:
    """``specconform export``: a finding's reproduction as one standalone pytest file."""
    exp = sub.add_parser(
        "export",
        help="write a finding's minimal reproduction as a standalone pytest file that drives the engine's own API",
    )
    exp.add_argument(
        "finding", help="a reproduction file (RUN_DIR/reproductions/*.json, proofs/<engine>/*.json) or a run folder"
    )
    exp.add_argument(
        "selector", nargs="?", help="with a run folder: the finding's requirement, fingerprint or finding name"
    )
    exp.add_argument("--pytest", action="store_true", help="write a pytest module (the one format so far)")
    exp.add_argument("-o", "--output", help="the file to write (default: test_<engine>_<requirement>.py; - for stdout)")
    exp.add_argument("--check", help="with a run folder: only this check's reproductions")
    exp.add_argument(
        "--engine",
        help="the idiom to write (reference, vllm-0.33-mrv2, sglang-0.5.23, sglang-0.5.23-strict); default: the "
        "engine the reproduction was recorded for",
    )
    exp.set_defaults(func=cmd_export)
