"""``specconform prove``: a published cause is proven when its patch, applied to a copy of the peer's
installed module in a fresh interpreter, turns the failing minimal reproduction into a pass.

The peer here is a toy package made in ``tmp_path`` (a rule with a bug at a known line) behind a tiny
adapter (the oracle whose forced rows go through that rule), so no third-party engine is needed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from specconform.harness import cli, proofs
from specconform.harness.expectations import load_expectations

ROOT = Path(__file__).resolve().parents[2]

RULE = '''"""A toy budget rule: which rows are forced."""


def forced(rows):
    return [-1 for _ in rows]  # the bug: nothing is ever forced
'''

ADAPTER = """from specconform.harness.adapters.oracle import OracleBudget, OracleEngine
from toybudget import rule


class ToyBudget(OracleBudget):
    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return rule.forced(super().forced_tokens(num_draft_tokens, draft_token_ids))


class ToyEngine(OracleEngine):
    name = "toy"

    def budget_state(self, *args, **kwargs):
        return ToyBudget(super().budget_state(*args, **kwargs).batch)


def make():
    return ToyEngine()
"""

FIX = """--- a/toybudget/rule.py
+++ b/toybudget/rule.py
@@ -4,2 +4,2 @@
 def forced(rows):
-    return [-1 for _ in rows]  # the bug: nothing is ever forced
+    return list(rows)
"""
WRONG_FIX = FIX.replace("return list(rows)", "return [-2 for _ in rows]")
NOT_APPLYING = FIX.replace(" def forced(rows):", " def forced(row):")
FINGERPRINT = "TB-FORCE-1/left-a-forced-row-free"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A repository root with the toy peer importable (here and in child interpreters), an expectations
    file whose one entry's proof is ``proofs/toy/fix.diff`` and ``proofs/toy/case.json``."""
    peer = tmp_path / "peer"
    (peer / "toybudget").mkdir(parents=True)
    (peer / "toybudget" / "__init__.py").write_text("")
    (peer / "toybudget" / "rule.py").write_text(RULE)
    (peer / "toyengine.py").write_text(ADAPTER)
    monkeypatch.syspath_prepend(str(peer))
    monkeypatch.setenv("PYTHONPATH", f"{peer}:{ROOT}")
    golden = json.loads((ROOT / "specs/vectors/thinking-budget.json").read_text())
    scenario = next(s for s in golden["scenarios"] if s["name"] == "model-opened-budget-1")
    (tmp_path / "proofs" / "toy").mkdir(parents=True)
    (tmp_path / "proofs/toy/case.json").write_text(
        json.dumps({"format": 1, "kind": "thinking-budget", "scenarios": [scenario], "errors": []})
    )
    (tmp_path / "proofs/toy/fix.diff").write_text(FIX)
    (tmp_path / "expectations").mkdir()
    expectations = tmp_path / "expectations" / "toy.yaml"
    entry = {
        "check": "vectors/thinking-budget/model-opened-budget-1",
        "requirement": "TB-FORCE-1",
        "status": "FAIL",
        "fingerprint": FINGERPRINT,
        "reason": "rule.forced drops every forced row (toybudget/rule.py line 5)",
        "proof": {"patch": "proofs/toy/fix.diff", "reproduction": "proofs/toy/case.json"},
    }
    expectations.write_text(yaml.safe_dump({"engine": "toy", "expectations": [entry]}))
    return tmp_path, expectations


def prove(expectations, capsys, *extra):
    status = cli.main(["prove", str(expectations), "--engine", "toyengine:make", *extra])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_unpatched_toy_fails_and_the_patched_passes(project):
    root, _ = project
    case = root / "proofs/toy/case.json"
    unpatched = proofs.replay_in_child("toyengine:make", case)
    patched = proofs.replay_in_child("toyengine:make", case, root / "proofs/toy/fix.diff")
    assert [r["fingerprint"] for r in unpatched] == [FINGERPRINT]
    assert [r["fingerprint"] for r in patched] == [""]
    assert "toybudget.rule" not in sys.modules  # the parent never imported the peer


def test_a_fixing_patch_proves_the_entry(project, capsys):
    _, expectations = project
    status, out, _ = prove(expectations, capsys)
    assert status == 0
    assert out.splitlines()[0] == (
        f"PROVEN vectors/thinking-budget/model-opened-budget-1 TB-FORCE-1: unpatched {FINGERPRINT}, patched PASS"
    )


def test_a_wrong_patch_is_not_proven(project, capsys):
    root, expectations = project
    (root / "proofs/toy/fix.diff").write_text(WRONG_FIX)
    status, out, _ = prove(expectations, capsys, "--entry", "vectors/thinking-budget/model-opened-budget-1:TB-FORCE-1")
    assert status == 1
    assert out.startswith("NOT PROVEN vectors/thinking-budget/model-opened-budget-1 TB-FORCE-1: patched it still fails")


def test_a_diff_that_does_not_apply_is_a_usage_error_naming_it(project, capsys):
    root, expectations = project
    (root / "proofs/toy/fix.diff").write_text(NOT_APPLYING)
    status, out, err = prove(expectations, capsys)
    assert status == 2 and out == ""
    assert "fix.diff does not apply to toybudget/rule.py: line 4 is 'def forced(rows):'" in err


def test_a_reproduction_that_passes_unpatched_is_not_proven(project, capsys):
    root, expectations = project
    (root / "peer/toybudget/rule.py").write_text(RULE.replace("[-1 for _ in rows]", "list(rows)      "))
    (root / "proofs/toy/fix.diff").write_text(FIX.replace("[-1 for _ in rows]", "list(rows)      "))
    status, out, _ = prove(expectations, capsys)
    assert status == 1
    assert "unpatched the reproduction does not fail with TB-FORCE-1/left-a-forced-row-free (it passes)" in out


def test_usage_errors(project, capsys):
    root, expectations = project
    status, _, err = prove(expectations, capsys, "--entry", "no/such/check")
    assert status == 2 and "no entry matches --entry 'no/such/check'" in err
    (root / "proofs/toy/case.json").unlink()
    status, _, err = prove(expectations, capsys)
    assert status == 2 and "proof reproduction 'proofs/toy/case.json' does not exist" in err


def test_load_expectations_checks_the_proof(project):
    root, expectations = project
    data = yaml.safe_load(expectations.read_text())
    data["expectations"][0]["proof"]["command"] = "make it so"
    expectations.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"proof has unknown keys \['command'\]"):
        load_expectations(expectations)
    del data["expectations"][0]["proof"]["command"]
    data["expectations"][0]["proof"]["patch"] = "proofs/toy/none.diff"
    expectations.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="proof patch 'proofs/toy/none.diff' does not exist"):
        load_expectations(expectations)


def test_a_combined_proof_names_the_defects_it_joins(project):
    root, expectations = project
    data = yaml.safe_load(expectations.read_text())
    proof = data["expectations"][0]["proof"]
    proof["defects"] = [proof["patch"]]
    expectations.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="proof defects must list the two or more single-defect patches"):
        load_expectations(expectations)
    proof["defects"] = [proof["patch"], "proofs/toy/other.diff"]
    expectations.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="proof defect 'proofs/toy/other.diff' does not exist"):
        load_expectations(expectations)
    (root / "proofs/toy/other.diff").write_text((root / proof["patch"]).read_text())
    (loaded,) = load_expectations(expectations)
    assert loaded.defects == (proof["patch"], "proofs/toy/other.diff")


def test_hunks_apply_strictly_at_their_lines():
    text = "a\nb\nc\nd\n"
    diff = "--- a/p/m.py\n+++ b/p/m.py\n@@ -2,2 +2,3 @@\n b\n-c\n+C\n+c2\n@@ -4,0 +5,1 @@\n+e\n"
    (patch,) = proofs.parse_diff(diff)
    assert proofs.apply_hunks(text, patch) == "a\nb\nC\nc2\nd\ne\n"
    shifted = diff.replace("@@ -2,2 +2,3 @@", "@@ -1,2 +1,3 @@")
    with pytest.raises(proofs.ProofUsageError, match="line 1 is 'a', the hunk expects 'b'"):
        proofs.apply_hunks(text, proofs.parse_diff(shifted)[0])
    with pytest.raises(proofs.ProofUsageError, match="header says 3 and 3"):
        proofs.parse_diff(diff.replace("@@ -2,2 +2,3 @@", "@@ -2,3 +2,3 @@"))
    assert proofs.module_name("vllm/v1/sample/x.py") == "vllm.v1.sample.x"
    assert proofs.module_name("pkg/__init__.py") == "pkg"


KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def _fill(out_ptr):
    tl.store(out_ptr, 1)


def value():
    out = torch.zeros(1, dtype=torch.int32)
    _fill[(1,)](out)
    return int(out[0])
"""
KERNEL_FIX = """--- a/toykernel/fill.py
+++ b/toykernel/fill.py
@@ -7,2 +7,2 @@
 def _fill(out_ptr):
-    tl.store(out_ptr, 1)
+    tl.store(out_ptr, 2)
"""
DRIVER = """
import sys, tempfile
from pathlib import Path
from specconform.harness import proofs
proofs.install(proofs.patch_into(Path(sys.argv[1]), Path(tempfile.mkdtemp())))
from toykernel import fill
print(fill.value(), fill.__file__)
"""


def test_a_triton_kernel_runs_from_the_patched_source(tmp_path):
    """A kernel defined in a patched module is compiled (here: interpreted) from the patched file."""
    pytest.importorskip("triton")
    (tmp_path / "toykernel").mkdir()
    (tmp_path / "toykernel" / "__init__.py").write_text("")
    (tmp_path / "toykernel" / "fill.py").write_text(KERNEL)
    (tmp_path / "fix.diff").write_text(KERNEL_FIX)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=f"{tmp_path}:{ROOT}")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(tmp_path / "fix.diff")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    value, file = done.stdout.split()
    assert value == "2" and file != str(tmp_path / "toykernel" / "fill.py") and file.endswith("toykernel/fill.py")
