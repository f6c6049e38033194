"""Minimal reproductions: ``replay`` one against an engine, ``prove`` the causes published with them."""

from __future__ import annotations

from .. import preflight, proofs
from ..adapters import check_engine_spec
from ..config import RunConfig
from ..core import UsageError
from ..run_options import add_api_options


def cmd_replay(args) -> int:
    """Re-run a standalone vector file (a minimal reproduction) against one engine."""
    from .. import reproductions
    from ..adapters import make_engine

    api_options = RunConfig.from_options(vars(args)).engine_api_options
    check_engine_spec(args.engine, api_options)
    preflight.check_engines([args.engine], api_options)
    try:
        document = reproductions.load(args.file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    engine = make_engine(args.engine, api_options)
    failed = 0
    recorded = document.get("fingerprint", "")
    for result in reproductions.replay(engine, document):
        if result.fingerprint:
            failed += 1
            same = (
                ""
                if not recorded
                else (" (as recorded)" if result.fingerprint == recorded else f" (recorded {recorded})")
            )
            print(f"FAIL {result.fingerprint}{same} {result.name}: {result.evidence}")
        else:
            print(f"PASS {result.name}: {result.evidence}")
    return 1 if failed else 0


def cmd_prove(args) -> int:
    """``specconform prove``: prove each published cause that has a proof (``specconform.harness.proofs``), one
    line per entry; 1 if any is not proven."""
    api_options = RunConfig.from_options(vars(args)).engine_api_options
    check_engine_spec(args.engine, api_options)
    entries, without = proofs.load_proofs(args.expectations, args.entry or "")
    not_proven = 0
    for entry in entries:
        if entry.server is not None and not api_options.get("base_url"):
            raise proofs.ProofUsageError(
                f"{entry.label}: its proof starts a server; name it with --base-url (and --model)"
            )
        ok, why = proofs.prove(entry, args.engine, api_options=api_options)
        not_proven += not ok
        print(f"{'PROVEN' if ok else 'NOT PROVEN'} {entry.label}: {why}", flush=True)
    for label in without:
        print(f"NO PROOF {label}", flush=True)
    print(f"{len(entries) - not_proven} proven, {not_proven} not proven, {len(without)} FAIL entries without a proof")
    return 1 if not_proven else 0


def add_replay_parser(sub) -> None:
    """``specconform replay``: re-run a minimal reproduction against an engine."""
    rpl = sub.add_parser("replay", help="re-run a standalone vector file (a minimal reproduction) against an engine")
    rpl.add_argument("file", help="a vector file, e.g. RUN_DIR/reproductions/<engine>--<check>--<requirement>.json")
    rpl.add_argument(
        "--engine",
        required=True,
        help="oracle, reference[:cuda[:triton]], zoo:<mutant>, module:factory, or for an api reproduction "
        "embedded:single|multi or openai with its options",
    )
    add_api_options(rpl)
    rpl.set_defaults(func=cmd_replay)


def add_prove_parser(sub) -> None:
    """``specconform prove``: check each expectation's proof."""
    prv = sub.add_parser(
        "prove", help="check each expectation's proof: its reproduction fails unpatched and passes patched"
    )
    prv.add_argument("expectations", help="an expectations YAML file whose entries carry proof: {patch, reproduction}")
    prv.add_argument(
        "--engine", required=True, help="the engine the entries are of, e.g. specconform.harness.adapters.vllm:make"
    )
    prv.add_argument("--entry", help="only this entry: CHECK or CHECK:REQUIREMENT")
    add_api_options(prv)
    prv.set_defaults(func=cmd_prove)
