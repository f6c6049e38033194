"""reports/perf/README.md is generated from the bench JSON, and stays in step with it."""

import json
import re
import subprocess
import sys
from pathlib import Path

from specconform.harness import perf_tables
from specconform.harness.bench import peers as bench_peers
from specconform.harness.oracle import draws

ROOT = Path(__file__).resolve().parents[2]


def _bench(folder: Path, stamp: str, ours_ms: float, draws: dict | None = None) -> Path:
    row = dict(
        family="mode", B=256, K=4, V=32_000, dtype="float32", draft_probs=True, mode="greedy", acceptance=0.01,
        floor_ms=ours_ms / 2, one_pass_floor_ms=ours_ms * 4, spread={"ours": 1.01}, not_run={"flashinfer": "no greedy"},
        ours_ms=ours_ms, ours_eager_ms=ours_ms, ours_over_floor=2.0, ours_over_one_pass_floor=0.25,
    )  # fmt: skip
    results = dict(
        environment=dict(gpu="Test GPU", torch="t", triton="tr", copy_tb_per_s=1.0),
        peers={"flashinfer": "not measured: absent"},
        rejection=[row],
        budget=[dict(B=1, K=0, ours_us=5.0, ours_with_logits_us=5.5, ours_with_logits_eager_us=6.0)],
        statistics=dict(case="c", trials=10, positions=3, seconds=1.0, passed=True),
    )
    if draws is not None:
        results["draws"] = draws
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"bench-{stamp}.json"
    path.write_text(json.dumps(results))
    return path


def test_tables_come_from_the_newest_bench_of_each_gpu(tmp_path):
    _bench(tmp_path / "Test-GPU", "20260101-000000", ours_ms=0.5)
    _bench(tmp_path / "Test-GPU", "20260102-000000", ours_ms=0.04)
    page = perf_tables.render(tmp_path)
    assert "bench-20260102-000000.json" in page and "bench-20260101-000000" not in page
    shape = next(line for line in page.splitlines() if line.startswith("| B = 256, K = 4, V = 32,000, greedy"))
    # 0.04 ms is shown in µs; the floors carry ours over them; a peer that did not run says why
    assert "| 40.0 µs |" in shape and "20.0 µs (2.00×)" in shape and "0.160 ms (0.25×)" in shape
    assert "| no greedy |" in shape
    assert "| B = 1, K = 0 | 5.0 µs | 5.5 µs | 6.0 µs | not run | not run |" in page
    # targets: judged on the shapes the bench holds, "not run" where it holds none
    greedy = "| greedy within 1.05× of reading the target rows once | not met (0 of 1 shapes); worst: B = 256, K = 4"
    assert greedy + ", V = 32,000, greedy, 2.00× |" in page
    assert "| B = 1, K = 4 at most 15 µs from a CUDA graph | not run |" in page
    assert "| budget step with logits at B = 1024 at most 10 µs (graph) | not run |" in page


def test_the_header_names_each_columns_draws_where_the_bench_recorded_them(tmp_path):
    _bench(tmp_path / "Old-GPU", "20260101-000000", ours_ms=0.5)
    _bench(tmp_path / "New-GPU", "20260102-000000", ours_ms=0.5, draws=bench_peers.draw_schemes())
    new, old = perf_tables.render(tmp_path).split("## Test GPU")[1:]  # folders in name order
    assert "Draws:" not in old  # a bench from before the record says nothing rather than guess
    released = re.findall(r"^## (\d[\w.]*)$", (ROOT / "specs/CHANGELOG.md").read_text(), re.MULTILINE)[0]
    assert (
        f"Draws: ours reference (spec {released}, RS-RNG-3); vllm torch generator; vllm_v2 vllm-mrv2; "
        "flashinfer flashinfer-philox." in new
    )


def test_each_peers_draws_are_a_scheme_the_oracle_defines():
    schemes = bench_peers.draw_schemes()
    assert set(schemes) == {"ours", *bench_peers.PREPARE_REJECTION}
    for name, scheme in schemes.items():
        if name != "vllm":  # the legacy sampler's torch generator has no counter-based definition
            assert scheme.split()[0] in draws.names(), (name, scheme)


def test_published_tables_match_the_published_benches():
    published = (ROOT / "reports/perf/README.md").read_text()
    assert published == perf_tables.render(ROOT / "reports/perf"), (
        "run: python -m specconform.harness.perf_tables reports/perf"
    )


def test_a_folder_without_benches_is_a_usage_error(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "specconform.harness.perf_tables", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "root:" in result.stderr and str(tmp_path) in result.stderr
