"""Same seed, same cases, whatever is imported (issue 28): ``specconform.harness.cases.draw`` gives the same budget
scenarios and rejection cases in fresh interpreters that imported different modules before drawing,
with different ``PYTHONHASHSEED``s, and other cases for another seed.

Hypothesis draws now and then from constants it collects from the source of every loaded local
module; before ``specconform.harness.cases`` pinned that pool, importing ``specconform.harness.checks`` or one more
module changed the cases a ``--seed`` drew (the extra module here holds integers inside the ranges the case strategies
draw from, so a leak would show)."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import hashlib, importlib, json, sys

from specconform.harness.cases import draw
from specconform.harness.cases.budget import BudgetFamily, scenarios
from specconform.harness.cases.rejection import RejectionFamily, rejection_cases

for name in sys.argv[1:]:
    importlib.import_module(name)


def rejection_text(case):
    parts = []
    for key, value in sorted(vars(case).items()):
        if value is None:
            parts.append(f"{key}=None")
        else:
            parts.append(f"{key}={value.shape}{value.dtype.str}:{hashlib.sha256(value.tobytes()).hexdigest()}")
    return ";".join(parts)


def digests(texts):
    return [hashlib.sha256(text.encode()).hexdigest()[:16] for text in texts]


out = {}
for seed in (777, 778):
    out[f"budget/{seed}"] = digests(repr(s) for s in draw(scenarios(BudgetFamily(), "request"), seed, 6))
    out[f"batch/{seed}"] = digests(
        repr(s) for s in draw(scenarios(BudgetFamily(batch_ops=True, drafts=True), "request"), seed, 4)
    )
for seed in (1, 2, 3):
    out[f"rejection/{seed}"] = digests(rejection_text(c) for c in draw(rejection_cases(RejectionFamily()), seed, 8))
# the families drawn after a check's own cases: mass on the last ids only, forced rows with non-finite logits
last_ids = RejectionFamily(masks=("last-ids",), vocabs=(37, 257, 4097))
non_finite = RejectionFamily(greedy="all", forced=True, forced_logits="non-finite")
for seed in (1, 2):
    out[f"last-ids/{seed}"] = digests(rejection_text(c) for c in draw(rejection_cases(last_ids), seed, 4))
    out[f"non-finite/{seed}"] = digests(rejection_text(c) for c in draw(rejection_cases(non_finite), seed, 4))
print(json.dumps(out))
"""

EXTRA = """# integers inside the ranges the case strategies draw from: a constant pool leak would pick them
SEED_LIKE = 123_456_789
BUDGET_LIKE = 2**31 - 2
SIZES = (1000, 4097, 8193, 65_536, 3_000_000_000)
NAME = "extra-constants"
"""


def _draw_in_fresh_interpreter(imports: list[str], hash_seed: str, extra_dir: Path) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=os.pathsep.join([str(ROOT), str(extra_dir)]))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *imports], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_same_seed_draws_the_same_cases_whatever_is_imported(tmp_path):
    (tmp_path / "extra_constants.py").write_text(EXTRA)
    import_sets = [
        ([], "0"),
        (
            [
                "specconform.harness.checks",
                "specconform.harness.adapters.zoo",
                "specconform.harness.cli",
                "specconform.harness.mutation",
            ],
            "1",
        ),
        (["extra_constants", "specconform.harness.pytest_plugin"], "random"),
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda args: _draw_in_fresh_interpreter(*args, tmp_path), import_sets))

    baseline = results[0]
    for (imports, hash_seed), result in zip(import_sets[1:], results[1:]):
        for key, cases in baseline.items():
            assert result[key] == cases, f"{key}: other cases after importing {imports} (PYTHONHASHSEED={hash_seed})"

    # the comparison could fail: another seed draws other cases, and a sequence's cases differ
    assert baseline["budget/777"] != baseline["budget/778"]
    assert baseline["batch/777"] != baseline["batch/778"]
    assert len({tuple(baseline[f"rejection/{seed}"]) for seed in (1, 2, 3)}) == 3
    assert baseline["last-ids/1"] != baseline["last-ids/2"]
    assert baseline["non-finite/1"] != baseline["non-finite/2"]
    assert len(set(baseline["budget/777"])) > 1
