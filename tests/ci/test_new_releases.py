"""The scheduled re-judging workflow's job logic (scripts/ci/new_releases.py), offline: registry indexes given as
files, the published runs of this checkout as the matrix. Each expected value is read from the index text or the
release files, not from the script."""

import importlib.util
import json
import subprocess
import sys

import pytest

from specconform.harness.products import releases

from .conftest import ROOT, SCRIPTS

spec = importlib.util.spec_from_file_location("new_releases", SCRIPTS / "new_releases.py")
new_releases = importlib.util.module_from_spec(spec)
sys.modules["new_releases"] = new_releases  # its dataclasses look their module up
spec.loader.exec_module(new_releases)

ENGINES_DIR = ROOT / "reports" / "engines"


def _json_index(package: str, files: dict[str, bool]) -> str:
    """A PEP 691 index of ``files`` (name -> yanked)."""
    return json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": package,
            "files": [{"filename": f, "yanked": y} for f, y in files.items()],
        }
    )


def _html_index(files: dict[str, bool]) -> str:
    """A PEP 503 index of ``files`` (name -> yanked)."""
    anchors = "".join(
        f'<a href="https://x/{f}#sha256=0"{" data-yanked=" if y else ""}>{f}</a><br/>' for f, y in files.items()
    )
    return f"<!DOCTYPE html><html><body>{anchors}</body></html>"


SGLANG_FILES = {
    "sglang-0.5.9-py3-none-any.whl": False,
    "sglang-0.5.22-cp311-cp311-manylinux_2_34_x86_64.whl": False,
    "sglang-0.5.23.tar.gz": False,
    "sglang-0.5.24rc1-py3-none-any.whl": False,  # a pre-release: not a release to judge
    "sglang-0.5.30-py3-none-any.whl": True,  # yanked
}


@pytest.mark.parametrize("render", [lambda f: _json_index("sglang", f), _html_index], ids=["json", "html"])
def test_the_newest_final_release_skips_pre_releases_and_yanked_files_and_orders_numerically(render):
    text = render(SGLANG_FILES)
    assert new_releases.index_versions(text, "sglang") == ["0.5.9", "0.5.22", "0.5.23"]
    assert new_releases.newest(text, "sglang") == "0.5.23"


def test_an_index_naming_no_release_of_the_package_is_an_error_naming_it():
    with pytest.raises(ValueError, match="names no final release of 'sglang' \\(1 files read\\)"):
        new_releases.newest(_html_index({"sglang-router-0.1.0.tar.gz": False}), "sglang")


def test_a_release_whose_cell_the_matrix_has_needs_nothing():
    # reports/engines/sglang-0.5.23 holds published runs of SGLang 0.5.23
    step = new_releases.plan("sglang", _html_index(SGLANG_FILES), ENGINES_DIR)
    assert step == {"engine": "sglang", "version": "0.5.23", "action": "none"}


def test_an_untaught_release_without_a_cell_asks_to_be_taught_naming_the_releases_file():
    step = new_releases.plan("sglang", _html_index({"sglang-0.5.24-py3-none-any.whl": False}), ENGINES_DIR)
    assert step["action"] == "teach" and step["version"] == "0.5.24"
    assert "0.5.24" not in releases.taught("sglang")
    assert "harness/products/sglang/releases.yaml" in step["message"]


def test_a_taught_release_without_a_cell_is_judged_on_a_branch_of_its_own(tmp_path):
    # an empty folder of published runs: no release has a cell
    version = releases.taught("vllm-mrv2")[-1]
    step = new_releases.plan("vllm", _html_index({f"vllm-{version}.tar.gz": False}), tmp_path)
    series = releases.series(version)
    assert step["action"] == "judge"
    assert step["tox_env"] == f"vllm-mrv2-{series}" and step["report"] == f"reports/engines/vllm-{series}-mrv2-cpu"
    assert step["branch"] == f"matrix/vllm-{version}" and version in step["title"]
    assert f"`tox -e vllm-mrv2-{series}`" in step["body"] and "summary.md" in step["body"]
    tox = (ROOT / "tox.ini").read_text()
    assert f"[testenv:{step['tox_env']}]" in tox  # the environment the job runs exists


def test_an_api_level_engine_is_judged_at_any_release(tmp_path):
    step = new_releases.plan(
        "transformers", _json_index("transformers", {"transformers-9.0.0.tar.gz": False}), tmp_path
    )
    assert step["action"] == "judge" and step["tox_env"] == "transformers"
    assert step["report"] == "reports/engines/transformers-9.0.0"


def test_the_command_line_prints_one_plan_per_index_and_refuses_an_unknown_engine(tmp_path):
    index = tmp_path / "sglang.html"
    index.write_text(_html_index(SGLANG_FILES))
    env_run = [sys.executable, str(SCRIPTS / "new_releases.py"), "plan"]
    done = subprocess.run([*env_run, "--index", f"sglang={index}"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["version"] for line in done.stdout.splitlines()] == ["0.5.23"]
    bad = subprocess.run([*env_run, "--index", f"tgi={index}"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "--index 'tgi=" in bad.stderr and "sglang" in bad.stderr


def test_the_scheduled_workflow_plans_every_engine_and_opens_a_pull_request_per_missing_cell():
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "releases.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    plan_run = "\n".join(s.get("run", "") for s in workflow["jobs"]["plan"]["steps"])
    assert "scripts/ci/new_releases.py plan" in plan_run
    for name, engine in new_releases.ENGINES.items():
        assert f"--index {name}=indexes/{name}.json" in plan_run
        assert engine.package in plan_run.split("for engine in ", 1)[1].split(";", 1)[0].split()
    judge = workflow["jobs"]["judge"]
    assert judge["strategy"]["matrix"]["step"] == "${{ fromJSON(needs.plan.outputs.judge) }}"
    judge_run = "\n".join(s.get("run", "") for s in judge["steps"])
    assert 'tox -e "${{ matrix.step.tox_env }}"' in judge_run
    assert "specconform matrix" in judge_run and "gh pr create" in judge_run
    # the fields the job reads are the ones a judge plan carries
    fields = {"tox_env", "branch", "title", "body", "report"}
    assert all(f"matrix.step.{field}" in yaml.safe_dump(judge) for field in fields)
