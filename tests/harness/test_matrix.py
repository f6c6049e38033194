"""``specconform matrix`` without a browser: ``matrix.md`` and the history across releases, on the published runs of a
made-up engine at three releases (``matrix_runs``: what each release's records say), and on the repository's own
published runs (the committed matrix is the one they make)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from specconform.harness import cli, matrix
from specconform.harness.matrix import lineage, runs
from specconform.harness.schemas import RunRecord

from . import matrix_runs

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)]+)\)")


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("published")
    engines, products = matrix_runs.build(root)
    out = root / "reports" / "matrix"
    argv = ["matrix", "--engines", str(engines), "--out", str(out), "--root", str(root), "--products", str(products)]
    assert cli.main(argv) == 0
    return root


def _table(md: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table after ``heading``, as {column: cell}."""
    lines = md.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|")]
    return [dict(zip(rows[0], row)) for row in rows[2:]]


def _label(cell: str) -> str:
    return LINK.sub("", cell).strip("[]")


def test_rows_are_engines_at_releases_in_release_order_read_from_each_folders_latest_run(published):
    md = (published / "reports/matrix/matrix.md").read_text()
    table = _table(md, "Matrix")
    assert [(r["engine"], r["release"]) for r in table] == [
        ("gizmo", "2.0"),
        ("toy", "0.9.0"),
        ("toy", "0.10.0"),
        ("toy", "0.11.0"),
    ]
    toy = {r["release"]: r for r in table if r["engine"] == "toy"}
    # 0.10.0's folder holds an older run in which TB-MARK-1 fails: the later run, where it passes, is the one read
    assert matrix_runs.STAMPS["0.10.0"] in toy["0.10.0"]["run"] and matrix_runs.OLDER_STAMP not in md
    assert all(r["runner"] == "CPU" and r["variant"] == "-" for r in table)


def test_cells_are_the_class_verdicts_the_records_give(published):
    table = _table((published / "reports/matrix/matrix.md").read_text(), "Matrix")
    toy = {r["release"]: r for r in table if r["engine"] == "toy"}
    expected = {
        "0.9.0": {"tb.core": "FAILS", "tb.multitoken": "CONFORMS", "rs.seeded": "FAILS (known)"},
        "0.10.0": {"tb.core": "CONFORMS", "tb.multitoken": "FAILS (known)", "rs.seeded": "NOT JUDGED"},
        "0.11.0": {"tb.core": "FAILS (known)", "tb.multitoken": "FAILS (known)", "rs.seeded": "CONFORMS"},
    }
    for version, cells in expected.items():
        assert {cls: _label(toy[version][cls]) for cls in cells} == cells, version
        assert _label(toy[version]["ac.count"]) == "not claimed"
    assert [toy[v]["verdict"] for v in expected] == ["FAILS", "KNOWN FAILURES", "KNOWN FAILURES"]
    (gizmo,) = [r for r in table if r["engine"] == "gizmo"]
    assert gizmo["verdict"] == "CONFORMS" and {_label(gizmo[c]) for c in matrix_runs.CLAIMED} == {"CONFORMS"}


def test_history_follows_each_finding_by_its_fingerprints_and_flags_regressions(published):
    engines, products = published / "reports/engines", published / "products"
    (toy,) = [h for h in lineage.histories(runs.rows(engines, products)) if h.series[0] == "toy"]
    assert toy.versions == ["0.9.0", "0.10.0", "0.11.0"]
    by_requirement = {next(iter(x.requirements)): x for x in toy.lineages}
    assert sorted(by_requirement) == ["RS-RNG-1", "TB-FORCE-2", "TB-MARK-1"] and len(toy.lineages) == 3
    mark, force, rng = by_requirement["TB-MARK-1"], by_requirement["TB-FORCE-2"], by_requirement["RS-RNG-1"]
    assert (mark.first_seen, mark.fixed_in, mark.seen_again_in, mark.open) == ("0.9.0", ["0.10.0"], ["0.11.0"], True)
    # not judged in 0.10.0 (NOT_RUN): fixed only where it was judged and passed
    assert (rng.first_seen, rng.fixed_in, rng.open) == ("0.9.0", ["0.11.0"], False)
    # 0.11.0's finding fails in a second mode besides 0.10.0's: the same finding, its fingerprints grown
    assert (force.first_seen, force.fixed_in, force.open) == ("0.10.0", [], True)
    assert force.fingerprints == {"TB-FORCE-2/restarts", "TB-FORCE-2/skips"}
    assert {(r.requirement, r.passed, r.failed) for r in toy.regressions} == {
        ("TB-FORCE-2", "0.9.0", "0.10.0"),
        ("TB-MARK-1", "0.10.0", "0.11.0"),
    }
    md = (published / "reports/matrix/matrix.md").read_text()
    (line,) = [x for x in md.splitlines() if x.startswith("- **toy**")]
    assert "regressed in 0.10.0: TB-FORCE-2 (PASS in 0.9.0)" in line and "fixed in 0.10.0, seen again in 0.11.0" in line
    # sighted in the first release judged and fixed later: the line names where it was first seen
    assert f"{rng.name}: first seen in 0.9.0, fixed in 0.11.0" in line
    assert "one release judged (2.0): no history yet" in md


def test_a_finding_whose_fingerprints_change_entirely_is_another_finding(published, tmp_path):
    root = shutil.copytree(published, tmp_path / "changed")
    engines, products = root / "reports/engines", root / "products"
    path = engines / "toy-0.11" / matrix_runs.STAMPS["0.11.0"] / "results.jsonl"
    path.write_text(path.read_text().replace("TB-MARK-1/left-a-forced-row-free", "TB-MARK-1/forced-a-free-row"))
    (toy,) = [h for h in lineage.histories(runs.rows(engines, products)) if h.series[0] == "toy"]
    marks = [x for x in toy.lineages if x.requirements == {"TB-MARK-1"}]
    assert [(x.first_seen, x.fixed_in, x.seen_again_in) for x in marks] == [
        ("0.9.0", ["0.10.0"], []),
        ("0.11.0", [], []),
    ]


def test_every_link_of_the_markdown_leads_to_a_file(published):
    out = published / "reports/matrix"
    links = LINK.findall((out / "matrix.md").read_text())
    assert links and all((out / link).is_file() for link in links), [x for x in links if not (out / x).is_file()]


@pytest.mark.parametrize(
    ("texts", "release"),
    [
        (("vllm-0.33.0 (commit g4ba787ec9) model-runner-v2 torch-2.11.0+cu130",), "0.33.0"),
        (("flashinfer-0.7.2.post1 (beabf5004) torch-2.11.0",), "0.7.2.post1"),
        (("b1-0c1e570 (tiny-think-single)",), "b1-0c1e570"),
        (("tiny-qwen3-single-2b568f593b79", "mlx-lm-0.32.2"), "0.32.2"),
        (("", "transformers-serve-5.23.0"), "5.23.0"),
        (("tiny-think-single", "embedded:single"), ""),
    ],
)
def test_the_release_is_read_from_the_first_text_that_names_one(texts, release):
    assert runs.release(*texts) == release


def test_releases_sort_as_numbers():
    given = ["0.10.0", "1.0", "0.9.1", "1.0rc1", "1.0.post1", "0.9"]
    assert sorted(given, key=runs.release_key) == ["0.9", "0.9.1", "0.10.0", "1.0rc1", "1.0", "1.0.post1"]
    assert sorted(["b120-abcdef0", "b99-1234567"], key=runs.release_key) == ["b99-1234567", "b120-abcdef0"]


def test_the_committed_matrix_is_the_one_the_published_runs_make():
    out = ROOT / "reports/matrix"
    made = dict(zip(("matrix.md", "index.html"), matrix.render(ROOT / "reports/engines", out, ROOT)))
    for name, text in made.items():
        assert (out / name).read_text() == text, f"reports/matrix/{name} is stale: run `specconform matrix`"


def test_a_runs_page_is_rendered_on_demand_from_its_data_alone(published, tmp_path, capsys):
    # beside the published run, at its depth (the page's links to specs/ are relative); not a run's name, so no
    # matrix reads it
    folder = published / "reports/engines/toy-0.9"
    run = shutil.copytree(folder / matrix_runs.STAMPS["0.9.0"], folder / "rendered-on-demand")
    page = (run / "report.html").read_text()  # as the run was published (matrix_runs.publish)
    (run / "report.html").unlink()
    kept = {name: (run / name).read_bytes() for name in ("results.jsonl", "summary.md", "junit.xml")}
    (run / "junit.xml").unlink()
    assert cli.main(["report", "--html", str(run)]) == 0
    assert (run / "report.html").read_text() == page
    assert not (run / "junit.xml").exists()  # the page alone
    assert {name: (run / name).read_bytes() for name in ("results.jsonl", "summary.md")} == {
        name: kept[name] for name in ("results.jsonl", "summary.md")
    }
    capsys.readouterr()
    assert cli.main(["report", "--html", "--expectations", str(tmp_path / "x.yaml"), str(run)]) == 2
    assert "--html" in capsys.readouterr().err


def test_a_folder_of_published_runs_that_is_not_there_is_named(tmp_path, capsys):
    assert cli.main(["matrix", "--engines", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 2
    assert "absent" in capsys.readouterr().err and not (tmp_path / "out").exists()
    (tmp_path / "empty").mkdir()
    assert cli.main(["matrix", "--engines", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no published run" in capsys.readouterr().err


def test_two_runs_of_one_release_that_judge_different_classes_are_read_as_one_in_its_history():
    # 0.9.0's budget classes in one folder's run, its rejection classes in a later run of another folder (as a CPU
    # judges a release's budget and its verification apart): the history sees both, as if one run held them
    def row(folder: str, stamp: str, records: list[RunRecord]) -> runs.Row:
        return runs.Row("toy", folder, "toy", "0.9.0", "-", "CPU", Path(folder) / stamp, records)

    statuses = matrix_runs.RELEASES["0.9.0"]
    whole = matrix_runs.records("toy", "0.9.0", statuses)
    budget = [r for r in whole if r.cls.startswith("tb.")]
    rest = [r for r in whole if not r.cls.startswith("tb.")]
    (joined,) = lineage.histories([row("toy-0.9", "20260101-000000", budget), row("toy-rs", "20260102-000000", rest)])
    (alone,) = lineage.histories([row("toy-0.9", "20260101-000000", whole)])
    failing = [rid for rid, (status, _, _) in statuses.items() if status == "FAIL"]
    assert len(joined.lineages) == len(failing) == 2
    assert sorted(x.name for x in joined.lineages) == sorted(x.name for x in alone.lineages)


def test_a_cpu_run_under_triton_s_interpreter_and_a_pure_torch_cpu_run_share_one_history():
    # 0.9.0 judged on a CPU under Triton's interpreter (its one verifier is Triton kernels), 0.10.0 on a CPU in torch:
    # TB-MARK-1 fails in 0.9.0 and passes in 0.10.0, so it is fixed in 0.10.0; a GPU run of 0.9.0 stays apart
    def row(version: str, runner: str) -> runs.Row:
        recs = matrix_runs.records("toy", version, matrix_runs.RELEASES[version])
        return runs.Row("toy", f"toy-{version}", "toy", version, "-", runner, Path(matrix_runs.STAMPS[version]), recs)

    cpu, gpu = lineage.histories(
        [row("0.10.0", "CPU"), row("0.9.0", "CPU (Triton interpreter)"), row("0.9.0", "NVIDIA H200")]
    )
    assert cpu.series == ("toy", "-", "CPU") and cpu.versions == ["0.9.0", "0.10.0"]
    (mark,) = [x for x in cpu.lineages if x.requirements == {"TB-MARK-1"}]
    assert (mark.first_seen, mark.fixed_in, mark.open) == ("0.9.0", ["0.10.0"], False)
    assert gpu.series == ("toy", "-", "NVIDIA H200") and gpu.versions == ["0.9.0"]
