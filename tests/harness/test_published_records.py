"""What a run publishes: a reproduction command on every record (also when the engine never started) and no path
of the machine that made it (home, temporary folder, Python's prefix, the project's own folder)."""

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import httpx2

from specconform.harness import cli, public
from specconform.harness.adapters import make_engine
from tests.harness.test_api_spec_counters import route_clients

ROOT = Path(__file__).resolve().parents[2]
HOME = os.path.expanduser("~")
MODEL_FILE = f"{HOME}/.cache/models/tiny-think.gguf"


def cannot_start():
    """A factory whose server is not there: it fails naming files of this machine (run in the engine's process)."""
    raise ConnectionError(f"no server for {MODEL_FILE}; its log is {tempfile.gettempdir()}/server.log")


def _machine_paths(text: str) -> list[str]:
    folders = {HOME, tempfile.gettempdir(), sys.prefix, str(ROOT)} - {"/"}
    return [folder for folder in folders if folder + "/" in text]


def test_an_engine_that_never_started_still_has_its_reproduction_and_no_machine_path(tmp_path, capsys):
    argv = ["run", "--engine", "tests.harness.test_published_records:cannot_start", "--check", "rejection/greedy"]
    assert cli.main([*argv, "--seed", "7", "--report-dir", str(tmp_path), "--quiet"]) == 1
    (run_dir,) = tmp_path.iterdir()
    (record,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert record["status"] == "ERROR" and "no server for" in record["message"]
    assert record["reproduce"] == (
        "specconform run --engine tests.harness.test_published_records:cannot_start --check rejection/greedy --seed 7"
    )
    summary = (run_dir / "summary.md").read_text()
    assert f"Reproduce: `{record['reproduce']}`" in summary
    # the page links the spec text relative to itself, wherever the run folder lies: that link is no record
    page = re.sub(r"href='[^']*/specs/", "href='specs/", (run_dir / "report.html").read_text())
    for published in ((run_dir / "results.jsonl").read_text(), summary, page):
        assert _machine_paths(published) == []
    assert "~/.cache/models/tiny-think.gguf" in record["message"] and "<tmp>/server.log" in record["message"]


def test_scrub_keeps_what_is_no_path_of_this_machine():
    text = f"http://127.0.0.1:8000/v1 answered 400; tokens [1, 2]; {tempfile.gettempdir()}file stays"
    assert public.scrub(text) == text  # a folder is matched only as whole path components
    assert public.scrub(f"{ROOT}/harness/runner.py") == "./harness/runner.py"


def test_a_model_served_from_a_file_is_versioned_by_its_file_name(monkeypatch):
    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": MODEL_FILE}]})
        return httpx2.Response(404)

    route_clients(monkeypatch, httpx2.MockTransport(handle))
    engine = make_engine("openai", {"base_url": "http://llama.test/v1", "model": MODEL_FILE, "api_profile": "llamacpp"})
    assert engine.version == "tiny-think.gguf"
