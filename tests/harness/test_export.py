"""``specconform export --pytest``: the exported file, run by pytest in a subprocess, passes on an engine that meets
the specification and fails on one with the finding's defect.

The reference implementation and the zoo run here everywhere: a zoo mutant's finding exported in the reference's
idiom passes on ``specconform.impl`` and fails once a ``conftest.py`` puts the mutant behind ``impl``'s API. The
published findings of vLLM Model Runner V2 and SGLang (budgets A and B) are exported in those engines' idioms and must
fail on the engine as installed and pass with the proof's patch (``specconform.harness.patched_pytest``); they skip
where the engine is not importable (CI has neither). ``VLLM_PYTHON`` and ``SGLANG_PYTHON`` name another interpreter
that has the engine (a peer virtualenv), where this one lacks it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specconform.harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
MUTANT_BEHIND_IMPL = '''
"""The zoo mutant {mutant!r} behind specconform.impl's public API, so that the exported test drives the mutant."""
from types import SimpleNamespace

import numpy as np
import torch

import specconform.impl as impl
from specconform.harness.adapters.zoo import make_mutant
from specconform.harness.oracle import rejection as rs

MUTANT = make_mutant({mutant!r})


class MutantBudgetState:
    def __init__(self, start, end, max_num_reqs, *, max_spec_len=0, scope="request"):
        self.state = MUTANT.budget_state(list(start), list(end), max_num_reqs, scope, max_spec_len)

    def sync_batch(self, update):
        self.state.sync_batch(update)

    def forced_tokens(self, num_draft_tokens, draft_token_ids):
        return torch.tensor(self.state.forced_tokens(num_draft_tokens.tolist(), draft_token_ids.tolist()))

    def update_state(self, sampled_token_ids):
        self.state.update_state(sampled_token_ids.tolist())


def mutant_rejection_sample(target_logits, draft_token_ids, num_draft_tokens, *, temperature=None, **tensors):
    values = {{name: None if t is None else t.numpy() for name, t in tensors.items()}}
    if values["draft_probs"] is not None:
        values["draft_probs"] = values["draft_probs"].astype(np.float64)
    case = rs.RejectionCase(
        target_logits=target_logits.double().numpy(),
        draft_token_ids=draft_token_ids.numpy(),
        num_draft_tokens=num_draft_tokens.numpy(),
        temperature=np.zeros(len(num_draft_tokens)) if temperature is None else temperature.double().numpy(),
        **values,
    )
    tokens, num_emitted = MUTANT.rejection_sample(case)
    return SimpleNamespace(token_ids=torch.tensor(tokens), num_emitted=torch.tensor(num_emitted))


impl.ThinkingBudgetState = MutantBudgetState
impl.rejection_sample = mutant_rejection_sample
'''


def _export(capsys, *argv) -> tuple[int, str]:
    code = main(["export", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def _pytest(test_file: Path, python: str = sys.executable, patch: Path | None = None) -> subprocess.CompletedProcess:
    """pytest on the exported file in a fresh interpreter (with ``patch`` applied to the installed engine)."""
    runner = ["-m", "specconform.harness.patched_pytest"] + (["--patch", str(patch)] if patch else []) + ["--"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [python, *runner, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(test_file)],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def _zoo_run(tmp_path: Path, mutant: str, check: str) -> Path:
    """A zoo mutant judged by one check: its run folder."""
    subprocess.run(
        [sys.executable, "-m", "specconform.harness.cli", "run", "--engine", f"zoo:{mutant}", "--check", check]
        + ["--report-dir", str(tmp_path / "runs")],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def test_a_zoo_finding_exports_against_the_reference_and_fails_on_the_mutant(tmp_path, capsys):
    run_dir = _zoo_run(tmp_path, "start-looked-for-inside-section", "budget/sequential")
    code, said = _export(capsys, str(run_dir), "TB-MARK-1", "--pytest")
    assert code == 2 and "no pytest idiom for engine 'zoo:start-looked-for-inside-section'" in said
    assert "reference, vllm-0.33-mrv2, sglang-0.5.23, sglang-0.5.23-strict" in said
    exported = tmp_path / "exported" / "test_mark.py"
    exported.parent.mkdir()
    code, said = _export(capsys, str(run_dir), "TB-MARK-1", "--pytest", "--engine", "reference", "-o", str(exported))
    assert code == 0, said
    text = exported.read_text()
    assert "from specconform.impl import" in text and "specconform.harness" not in text
    passed = _pytest(exported)
    assert passed.returncode == 0, passed.stdout[-2000:]
    (exported.parent / "conftest.py").write_text(MUTANT_BEHIND_IMPL.format(mutant="start-looked-for-inside-section"))
    failed = _pytest(exported)
    assert failed.returncode == 1 and "forced rows [-1], expected [4]" in failed.stdout, failed.stdout[-2000:]


def test_exact_rejection_cases_export_with_the_oracles_tokens(tmp_path, capsys):
    vectors = json.loads((ROOT / "specs" / "vectors" / "rejection.json").read_text())
    reproduction = tmp_path / "exact.json"
    reproduction.write_text(json.dumps({"format": 1, "kind": "rejection", "exact": vectors["exact"][:3]}))
    exported = tmp_path / "exported" / "test_exact.py"
    exported.parent.mkdir()
    code, said = _export(capsys, str(reproduction), "--pytest", "--engine", "reference", "-o", str(exported))
    assert code == 0, said
    passed = _pytest(exported)
    assert passed.returncode == 0 and "3 passed" in passed.stdout, passed.stdout[-2000:]
    (exported.parent / "conftest.py").write_text(MUTANT_BEHIND_IMPL.format(mutant="num-emitted-is-k-plus-one"))
    failed = _pytest(exported)
    assert failed.returncode == 1 and "num_emitted" in failed.stdout, failed.stdout[-2000:]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["proofs/sglang-0.5.23/seeded-coins-keyed-by-step.json"], "a 'check' reproduction"),
        (["specs/vectors/rejection.json", "--engine", "reference"], "statistical entries (sampled_drafts)"),
        (["proofs/vllm-0.33-mrv2/start-restarts-count.json"], "names no engine: choose the idiom with --engine"),
        (["proofs/vllm-0.33-v1/stray-end-kept.json"], "no pytest idiom for engine 'vllm-0.33-v1'"),
        (["reports/engines/sglang-0.5.23/20261126-180332"], "name the finding"),
        (["reports/engines/sglang-0.5.23/20261126-180332", "RS-NONE-1"], "requirements with one: TB-MARK-1"),
    ],
)
def test_what_cannot_be_exported_is_a_usage_error(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(ROOT)
    code, said = _export(capsys, *argv, "--pytest", "-o", "-")
    assert code == 2 and message in said, said


def test_a_run_folder_exports_its_smallest_reproduction_of_the_finding(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, text = _export(capsys, "reports/engines/vllm-0.33-mrv2/20261126-101732", "TB-MARK-1", "--pytest", "-o", "-")
    assert code == 0 and "also matched (not exported)" in text
    assert "from vllm.v1.worker.gpu.sample.thinking_budget import ThinkingBudgetState" in text
    assert "specconform" not in text.split('"""', 2)[2].replace("specconform export", "")


def _engine_python(module: str, variable: str) -> str:
    """An interpreter that imports ``module``: this one, or the one ``variable`` names; skip where neither does."""
    python = os.environ.get(variable, sys.executable)
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    if subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode:
        pytest.skip(f"{module} is not importable (install it, or name an interpreter that has it in {variable})")
    return python


@pytest.mark.parametrize(
    ("module", "variable", "expectations", "requirement"),
    [
        ("vllm", "VLLM_PYTHON", "harness/products/vllm-mrv2/expectations-0.33.yaml", "TB-MARK-1"),
        ("sglang", "SGLANG_PYTHON", "harness/products/sglang/expectations-0.5.23.yaml", "TB-MARK-1"),
        ("sglang", "SGLANG_PYTHON", "harness/products/sglang-strict/expectations-0.5.23.yaml", "TB-MARK-1"),
    ],
)
def test_a_published_finding_fails_released_and_passes_under_its_proof(
    tmp_path, capsys, module, variable, expectations, requirement
):
    from specconform.harness.proofs import load_proofs

    python = _engine_python(module, variable)
    (entry,) = [e for e in load_proofs(ROOT / expectations)[0] if e.requirement == requirement]
    engine = {"vllm-mrv2": "vllm-0.33-mrv2", "sglang": "sglang-0.5.23", "sglang-strict": "sglang-0.5.23-strict"}[
        Path(expectations).parent.name
    ]
    exported = tmp_path / "test_finding.py"
    code, said = _export(capsys, str(entry.reproduction), "--pytest", "--engine", engine, "-o", str(exported))
    assert code == 0, said
    released = _pytest(exported, python)
    assert released.returncode == 1 and "forced rows" in released.stdout, released.stdout[-3000:]
    patched = _pytest(exported, python, entry.patch)
    assert patched.returncode == 0, patched.stdout[-3000:]
