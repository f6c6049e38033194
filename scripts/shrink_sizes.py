"""Sizes of the minimal reproductions the budget scenario checks leave on every zoo mutant they fail:
scenario size and compared logits rows, before and after shrinking (a Markdown table on stdout).

    python scripts/shrink_sizes.py [--mutant NAME ...]
"""

from __future__ import annotations

import argparse
import time

from specconform.harness import checks
from specconform.harness.adapters.zoo import MUTANTS, MutantEngine
from specconform.harness.core import Context


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mutant", action="append")
    args = parser.parse_args()
    scenario_checks = [c for c in checks.kernel_checks() if hasattr(c.run, "family")]
    print("| mutant | check | requirement | size before -> after | rows before -> after | seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mutant in MUTANTS:
        if args.mutant and mutant.name not in args.mutant:
            continue
        engine = MutantEngine(mutant)
        ctx = Context(profile=engine.profile)
        for check in scenario_checks:
            began = time.perf_counter()
            outcome = check.run(engine, ctx)
            seconds = time.perf_counter() - began
            for rid, result in outcome.requirements.items():
                document = result.reproduction
                if not isinstance(document, dict):
                    continue
                print(
                    f"| {mutant.name} | {check.name} | {rid} | {document['original_size']} -> "
                    f"{document['minimal_size']} | {document['original_rows']} -> {document['minimal_rows']} | "
                    f"{seconds:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
