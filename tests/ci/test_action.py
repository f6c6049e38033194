"""The composite action, the example workflow and tox.ini, read as GitHub and tox would read them:
every script a step runs exists, every input it reads is declared and every declared input is read,
every variable a step hands a script is one that script reads, and the action runs the same scripts as
the shell recipe (scripts/ci/all.sh)."""

import configparser
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, SCRIPTS

ACTION_DIR = ROOT / ".github" / "actions" / "specconform"
ACTION = yaml.safe_load((ACTION_DIR / "action.yml").read_text())
WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "gpu.yml").read_text())
STEPS = ACTION["runs"]["steps"]
SCRIPT_CALL = re.compile(r'bash "\$GITHUB_ACTION_PATH/([^"]+\.sh)"')


def _script_of(step) -> Path:
    (relative,) = SCRIPT_CALL.findall(step["run"])
    return (ACTION_DIR / relative).resolve()


def _expressions(node) -> str:
    """Every ``${{ ... }}`` and ``if:`` expression in ``node``, as one string."""
    if isinstance(node, dict):
        return " ".join(_expressions(v) + (f" {v}" if k == "if" else "") for k, v in node.items())
    if isinstance(node, list):
        return " ".join(_expressions(v) for v in node)
    return " ".join(re.findall(r"\$\{\{(.*?)\}\}", str(node)))


def test_the_action_is_a_composite_whose_run_steps_name_their_shell():
    assert ACTION["runs"]["using"] == "composite"
    for step in STEPS:
        assert ("run" in step) != ("uses" in step), step.get("name")
        if "run" in step:
            assert step["shell"] == "bash", step["name"]


def test_every_script_a_step_runs_exists_and_parses():
    for step in (s for s in STEPS if "run" in s):
        path = _script_of(step)
        assert path.parent == SCRIPTS and path.is_file(), f"{step['name']}: {path}"
        subprocess.run(["bash", "-n", str(path)], check=True)


def test_the_action_runs_the_same_scripts_as_the_recipe():
    in_action = [_script_of(s).name for s in STEPS if "run" in s]
    in_recipe = re.findall(r'bash "\$here/([\w-]+\.sh)"', (SCRIPTS / "all.sh").read_text())
    assert in_action == in_recipe
    assert sorted(in_action + ["all.sh", "lib.sh"]) == sorted(p.name for p in SCRIPTS.glob("*.sh"))


def test_inputs_read_are_declared_and_inputs_declared_are_read():
    read = set(re.findall(r"inputs\.([\w-]+)", _expressions(STEPS)))
    assert read == set(ACTION["inputs"])
    for name, spec in ACTION["inputs"].items():
        assert spec.get("description"), name
        assert "default" in spec, f"input {name} has no default"


def test_outputs_come_from_steps_that_exist():
    ids = {s["id"] for s in STEPS if "id" in s}
    for name, spec in ACTION["outputs"].items():
        (step,) = re.findall(r"steps\.([\w-]+)\.outputs", spec["value"])
        assert step in ids, name


@pytest.mark.parametrize("step", [s for s in STEPS if "run" in s], ids=lambda s: s["name"])
def test_every_variable_a_step_sets_is_read_by_its_script(step):
    text = _script_of(step).read_text() + (SCRIPTS / "lib.sh").read_text()
    for variable in step.get("env", {}):
        if variable != "GH_TOKEN":  # read by gh itself
            assert re.search(rf"\b{variable}\b", text), f"{step['name']}: {variable} is not read"


def test_the_example_workflow_uses_the_action_with_declared_inputs():
    steps = WORKFLOW["jobs"]["gpu"]["steps"]
    (use,) = [s for s in steps if s.get("uses") == "./.github/actions/specconform"]
    assert set(use.get("with", {})) <= set(ACTION["inputs"])
    assert WORKFLOW["permissions"]["actions"] == "read"  # the baseline is read from earlier runs' artifacts
    assert WORKFLOW["jobs"]["gpu"]["env"]["TORCH_SPEC"] == ""


def test_tox_takes_torch_from_torch_spec_everywhere():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    for section in tox.sections():
        deps = tox[section].get("deps", "").split("\n")
        for dep in deps:
            if re.match(r"\s*torch\b", dep):
                pytest.fail(f"[{section}] pins {dep.strip()!r}: use {{env:TORCH_SPEC:torch==2.13.0}}")
        if section == "testenv" or "-e ." in "\n".join(deps):
            assert "{env:TORCH_SPEC:torch==2.13.0}" in deps, section


def test_the_second_and_third_servers_and_any_option_reach_the_run():
    (conformance,) = [s for s in STEPS if s.get("id") == "conformance"]
    for variable, name in (("SPEC_BASE_URL", "spec-base-url"), ("PLAIN_BASE_URL", "plain-base-url"), ("ARGS", "args")):
        assert conformance["env"][variable] == f"${{{{ inputs.{name} }}}}"
