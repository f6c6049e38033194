"""The project's own tools: ``vectors``, ``schema``, ``bench``, ``serve`` and ``list``."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import checks as checks_module
from .. import spec, vectors
from ..adapters import require_extra
from ..config import RunConfig
from ..run_options import add_selection_options, bounded


def cmd_vectors(args) -> int:
    if args.write:
        for path in vectors.write_all():
            print(f"wrote {path}")
        return 0
    stale = vectors.stale()
    if stale:
        print(f"stale golden vectors: {', '.join(stale)} (run `specconform vectors --write`)")
        return 1
    print("golden vectors are up to date")
    return 0


def cmd_schema(args) -> int:
    from .. import schemas

    for path in schemas.write_schemas(Path(args.out) if args.out else spec.spec_dir() / "schemas"):
        print(f"wrote {path}")
    return 0


def cmd_bench(args) -> int:
    require_extra("triton", "specconform bench")
    from .. import bench

    return bench.main(args.out)


def cmd_serve(args) -> int:
    require_extra("serve", "specconform serve")
    import uvicorn

    from specconform.embedded import build_app

    app = build_app(
        num_speculative_tokens=args.speculative_tokens,
        device=args.device,
        engine_processes=True,
        engine_threads=args.engine_threads,
        engine_replicas=args.engine_replicas,
    )
    print(f"serving on http://{args.host}:{args.port}/v1", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def cmd_list(args) -> int:
    if args.what in ("engines", "profiles"):
        from .. import listing

        print("\n".join(listing.engine_lines() if args.what == "engines" else listing.profile_lines()))
    elif args.what == "order":
        from .. import requirement_order

        print(requirement_order.render_markdown(), end="")
    elif args.what == "requirements":
        for req in spec.load_registry().values():
            print(f"{req.id:14} {req.level:6} {req.cls:18} {req.summary}")
        print("\npermissions (no requirements: declared in the profile, honoured by every check):")
        for permission in spec.load_permissions().values():
            print(f"{permission.id:14} {'MAY':6} {permission.cls:18} {permission.summary} ({permission.declared_by})")
    else:
        for check in RunConfig.from_options(vars(args)).selected(checks_module.all_checks()):
            print(f"{check.name:58} {check.cls:18} {','.join(check.requirements)}")
        if not (args.check or args.exclude or args.shard):
            print(f"\nnot yet covered: {', '.join(checks_module.uncovered_requirements())}")
    return 0


def add_vectors_parser(sub) -> None:
    """``specconform vectors``: verify (or write) the golden vectors."""
    vec = sub.add_parser("vectors", help="verify (or --write) the golden vectors")
    vec.add_argument("--write", action="store_true", help="regenerate the golden vectors instead of verifying them")
    vec.set_defaults(func=cmd_vectors)


def add_schema_parser(sub) -> None:
    """``specconform schema``: write the JSON Schema of the data files."""
    sch = sub.add_parser("schema", help="write the JSON Schema of profile, expectation and record files")
    sch.add_argument("--out", help="the folder to write them to (default: specs/schemas)")
    sch.set_defaults(func=cmd_schema)


def add_bench_parser(sub) -> None:
    """``specconform bench``: GPU benchmarks of the reference implementation."""
    ben = sub.add_parser("bench", help="GPU benchmarks of the reference implementation")
    ben.add_argument("--out", help="directory for the JSON results (default: reports/perf/<gpu>)")
    ben.set_defaults(func=cmd_bench)


def add_serve_parser(sub) -> None:
    """``specconform serve``: serve the embedded reference engine."""
    srv = sub.add_parser(
        "serve", help="serve the embedded reference engine (OpenAI-compatible) on loopback, each engine in a process"
    )
    srv.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    srv.add_argument("--port", type=bounded(int, 1, 65535), default=8000, help="the TCP port to listen on")
    srv.add_argument(
        "--speculative-tokens",
        type=bounded(int, 1, 64),
        default=3,
        help="draft tokens per step of the -spec models",
    )
    srv.add_argument("--device", default="cpu", help="the torch device the tiny models run on (cpu, cuda)")
    srv.add_argument(
        "--engine-threads",
        type=bounded(int, 1, 256),
        default=1,
        help="intra-op threads of each engine process (docs/embedded-server.md: more is not faster)",
    )
    srv.add_argument(
        "--engine-replicas",
        type=bounded(int, 1, 64),
        default=1,
        help="processes of each engine; a request goes to the one with the fewest in flight (for many cores)",
    )
    srv.set_defaults(func=cmd_serve)


def add_list_parser(sub) -> None:
    """``specconform list``: the checks, requirements, their order, engines or profiles."""
    lst = sub.add_parser(
        "list", help="list the checks, the requirements, the order of the requirements, the engines or the profiles"
    )
    lst.add_argument(
        "what",
        choices=("checks", "requirements", "order", "engines", "profiles"),
        nargs="?",
        default="checks",
        help="what to list",
    )
    add_selection_options(lst)
    lst.set_defaults(func=cmd_list)
