"""The rows of the matrix: one per engine, version, variant and runner, each read from the latest published run.

Published runs live in ``reports/engines/<folder>/<YYYYMMDD-HHMMSS>/`` (``results.jsonl`` and the reports beside it).
A folder belongs to the product (``harness/products/<name>/product.yaml``) whose ``reports`` lists it; a folder no
product lists belongs to the product of another folder whose records name the same engine, else to a product of its
own name. A folder may hold several runs, of several engines (a server judged with one model and with another) and on
several runners (a CPU run and a GPU run): each (engine, runner) of a folder is one row, read from its latest run, so a
re-judged run replaces the one before it while a run on another device keeps its own row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import findings, runner
from ..products import registry
from ..reports.verdicts import EngineVerdict, engine_verdicts
from ..schemas import RunRecord

_STAMP = re.compile(r"^\d{8}-\d{6}(?:-\d+)?$")
# a release: 0.33, 0.33.0, 0.7.2.post1, 1.0rc2; preceded by the start, a space, "-" or "v"
_RELEASE = re.compile(r"(?:^|(?<=[\s\-v]))(\d+(?:\.\d+)+(?:\.?(?:post|rc|dev|a|b)\d+)?)(?![\w.])")
# llama.cpp's builds: b<number>-<commit>
_BUILD = re.compile(r"(?:^|(?<=[\s\-]))(b(\d+)-[0-9a-f]{7,40})(?![\w.])")
_PRE_RELEASE = {"dev": 0, "a": 1, "b": 2, "rc": 3, "": 4, "post": 5}


def release(*texts: str) -> str:
    """The engine's release as the first of ``texts`` to name one gives it (``0.33.0``, ``b1-0c1e570``); "" when none
    does."""
    for text in texts:
        for pattern in (_BUILD, _RELEASE):
            if found := pattern.search(text or ""):
                return found.group(1)
    return ""


def release_key(version: str) -> tuple:
    """A key that orders releases as their numbers do (``0.9`` before ``0.10``, ``1.0rc1`` before ``1.0`` before
    ``1.0.post1``; llama.cpp's builds by number); a version of another form sorts after those, by its text."""
    if build := re.fullmatch(r"b(\d+)-[0-9a-f]+", version):
        return (1, int(build.group(1)))
    if found := re.fullmatch(r"(\d+(?:\.\d+)*)\.?(post|rc|dev|a|b)?(\d+)?", version):
        numbers = tuple(int(n) for n in found.group(1).split("."))
        return (0, numbers, _PRE_RELEASE[found.group(2) or ""], int(found.group(3) or 0))
    return (2, version)


def runner_of(device: str, engine_version: str) -> str:
    """Where a run was judged, as its records' ``device`` says: a GPU's name, ``CPU`` (``CPU (Triton interpreter)``
    where the engine's kernels ran under Triton's interpreter) or ``HTTP server`` (an engine judged at its API)."""
    if device.startswith("http"):
        return "HTTP server"
    if device.startswith("cuda"):
        return device.partition(" ")[2] or device
    if device.startswith("cpu"):
        return "CPU (Triton interpreter)" if "Triton interpreter" in engine_version else "CPU"
    return device


def device_kind(runner: str) -> str:
    """The device a runner (``runner_of``) judges on, for comparing releases: ``CPU`` for both ``CPU`` and ``CPU
    (Triton interpreter)``. A release whose only verifier is Triton kernels (lmdeploy 0.16.0) runs them under the
    interpreter on a CPU, where the releases around it run a pure-torch verifier: both are what the engine's factory
    verifies with on a CPU, and one finding is followed across them."""
    return "CPU" if runner == "CPU (Triton interpreter)" else runner


def variant_of(engine: str, product: str, version: str) -> str:
    """What tells an engine's rows of one product and release apart: the words of its name that name neither the
    product nor a release (``llamacpp-b1-0c1e570-multi`` of ``llamacpp``: ``multi``); "" for none."""
    dropped = set(product.split("-")) | set(version.split("-"))
    words = [w for w in re.split(r"[-:]", engine) if w and w not in dropped and not _RELEASE.fullmatch(w)]
    return "-".join(words)


@dataclass
class Row:
    """One row of the matrix: an engine of one product at one release, variant and runner, and the latest run
    (``run``, a folder holding ``results.jsonl``) that judged it; ``earlier``: the older runs of the same row that
    this one replaces."""

    product: str
    folder: str
    engine: str
    version: str
    variant: str
    runner: str
    run: Path
    records: list[RunRecord]
    earlier: list[Path] = field(default_factory=list)

    @property
    def stamp(self) -> str:
        """The run's name: when it was made, ``YYYYMMDD-HHMMSS``."""
        return self.run.name

    @property
    def date(self) -> str:
        """The run's date, ``YYYY-MM-DD``."""
        return f"{self.stamp[:4]}-{self.stamp[4:6]}-{self.stamp[6:8]}"

    @property
    def gpu(self) -> bool:
        """Whether the run needed a GPU (a kernel judged on CUDA)."""
        return any(r.device.startswith("cuda") for r in self.records)

    @property
    def series(self) -> tuple[str, str, str]:
        """What the rows of one engine's history share: product, variant and runner, a CPU run under Triton's
        interpreter read as a CPU run (``device_kind``)."""
        return (self.product, self.variant, device_kind(self.runner))

    def verdict(self, uncovered: list[str]) -> EngineVerdict:
        """The engine's verdict in its run (``uncovered``: the requirements no check covers)."""
        (verdict,) = engine_verdicts(self.records, uncovered)
        return verdict

    def findings(self) -> list[findings.Finding]:
        """The run's findings of this engine (``findings.findings``)."""
        return findings.findings(self.records)


def _run_folders(folder: Path) -> list[Path]:
    """The run folders of a published report folder, oldest first (by their names, ``YYYYMMDD-HHMMSS``)."""
    return sorted(p for p in folder.iterdir() if _STAMP.match(p.name) and (p / "results.jsonl").is_file())


def _products_of(products_dir: Path | None) -> dict[str, str]:
    """``{report folder: product}`` as the product records list their folders."""
    products = registry.read(products_dir) if products_dir is not None else registry.products()
    return {folder: name for name, product in products.items() for folder in product.record.reports}


def rows(engines_dir: Path, products_dir: Path | None = None) -> list[Row]:
    """Every row of the published runs under ``engines_dir`` (``reports/engines``), ordered by series (product,
    variant and ``device_kind``), release and runner. ``products_dir``: where the product records are (default: the
    harness's own). A folder that holds no run is left out; a folder that is not there is an error naming it."""
    if not engines_dir.is_dir():
        raise FileNotFoundError(f"{str(engines_dir)!r} is not a folder of published runs (reports/engines)")
    listed = _products_of(products_dir)
    latest: dict[tuple[str, str, str], tuple[Path, list[RunRecord], list[Path]]] = {}
    for folder in sorted(p for p in engines_dir.iterdir() if p.is_dir()):
        for run in _run_folders(folder):
            records = runner.read_records(run)
            for engine in sorted({r.engine for r in records}):
                mine = [r for r in records if r.engine == engine]
                key = (folder.name, engine, runner_of(mine[0].device, mine[0].engine_version))
                earlier = latest[key][2] + [latest[key][0]] if key in latest else []
                latest[key] = (run, mine, earlier)
    product_of_engine = {engine: listed[folder] for folder, engine, _ in latest if folder in listed}
    out = []
    for (name, engine, where), (run, records, earlier) in latest.items():
        product = listed.get(name) or product_of_engine.get(engine) or name
        version = release(records[0].engine_version, engine, name) or "unknown"
        out.append(
            Row(product, name, engine, version, variant_of(engine, product, version), where, run, records, earlier)
        )
    return sorted(out, key=lambda r: (*r.series, release_key(r.version), r.runner, r.stamp))
