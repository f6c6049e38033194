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
SHARDED = yaml.safe_load((ROOT / ".github" / "workflows" / "sharded.yml").read_text())
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
    # the action reads the baseline through the REST API (actions/github-script), so it needs no gh
    assert in_action == [name for name in in_recipe if name != "fetch-baseline.sh"]
    assert sorted(in_action + ["all.sh", "lib.sh", "fetch-baseline.sh"]) == sorted(p.name for p in SCRIPTS.glob("*.sh"))


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
        if section == "testenv" or "-e .[" in "\n".join(deps):  # an install with extras, which bring torch
            assert "{env:TORCH_SPEC:torch==2.13.0}" in deps, section
        elif "-e ." in deps:  # the light install: specconform without extras, and without torch
            assert "{env:TORCH_SPEC:torch==2.13.0}" not in deps, section


def test_the_baseline_needs_no_github_cli():
    assert not any("gh " in step.get("run", "") for step in STEPS)
    find, download = (s for s in STEPS if s["name"] in ("find the baseline", "download the baseline"))
    assert find["uses"].startswith("actions/github-script@") and "listWorkflowRunArtifacts" in find["with"]["script"]
    assert download["uses"].startswith("actions/download-artifact@") and "run-id" in download["with"]


def test_every_artifact_is_named_per_job_and_leg():
    (names,) = [s for s in STEPS if s.get("id") == "names"]
    uploads = [s for s in STEPS if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert {u["with"]["name"] for u in uploads} == {
        "${{ steps.names.outputs.reports }}",
        "${{ steps.names.outputs.baseline }}",
    }
    for leg_input in ("engine", "base-url", "args", "checks", "device"):
        assert f"inputs.{leg_input}" in names["env"]["LEG"]
    assert "GITHUB_JOB" in names["with"]["script"]


def test_the_second_and_third_servers_and_any_option_reach_the_run():
    (conformance,) = [s for s in STEPS if s.get("id") == "conformance"]
    for variable, name in (("SPEC_BASE_URL", "spec-base-url"), ("PLAIN_BASE_URL", "plain-base-url"), ("ARGS", "args")):
        assert conformance["env"][variable] == f"${{{{ inputs.{name} }}}}"


@pytest.mark.parametrize("workflow", [WORKFLOW, SHARDED], ids=["gpu", "sharded"])
def test_example_workflows_run_one_at_a_time_per_branch(workflow):
    assert workflow["concurrency"]["group"].startswith("${{ github.workflow }}-")
    assert "pull_request" in workflow["concurrency"]["cancel-in-progress"]


def test_a_fork_pull_request_never_runs_on_a_self_hosted_runner():
    for workflow in (WORKFLOW, SHARDED):
        for name, job in workflow["jobs"].items():
            if "self-hosted" in job["runs-on"]:
                guard = job.get("if", "")
                assert "github.event.pull_request.head.repo.full_name == github.repository" in guard, name
                assert "github.event_name != 'pull_request'" in guard, name


def test_the_sharded_example_partitions_and_merges_the_shards():
    legs = SHARDED["jobs"]["judge"]["strategy"]["matrix"]["shard"]
    (use,) = [s for s in SHARDED["jobs"]["judge"]["steps"] if s.get("uses") == "./.github/actions/specconform"]
    assert use["with"]["args"] == f"--shard ${{{{ matrix.shard }}}}/{len(legs)}" and legs == list(
        range(1, len(legs) + 1)
    )
    assert set(use["with"]) <= set(ACTION["inputs"])
    merge = SHARDED["jobs"]["summary"]
    assert merge["needs"] == "judge" and merge["if"] == "always()"
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert download["with"]["pattern"] == "specconform-reports-judge-*"
    assert "specconform summary shards/*/runs/*" in merge["steps"][-1]["run"]
