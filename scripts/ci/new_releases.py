"""The job logic of the scheduled workflow that re-judges the newest release of each engine
(.github/workflows/releases.yml, docs/releases-ci.md): which release is newest, whether the matrix lacks its cell,
and what the job does about it, with the branch and pull request it opens.

Nothing here reaches a network: the workflow fetches each engine's registry index into a file first (PyPI's simple
index, JSON or HTML), and this script reads that file. So the whole decision is testable offline
(tests/ci/test_new_releases.py).

    python scripts/ci/new_releases.py plan --index sglang=sglang.json --index vllm=vllm.html [--engines-dir DIR]

prints one JSON object per engine: ``engine``, ``version`` (the newest final release), ``action`` (``judge``: its
cell is missing and its adapter is taught it; ``teach``: its cell is missing but its adapter refuses the release
until its releases.yaml names it; ``none``: the matrix has it), and for ``judge`` the ``tox_env`` that judges it, the
``report`` folder it writes, the ``branch``, ``title`` and ``body`` of the pull request.
"""

from __future__ import annotations

import argparse
import html.parser
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from specconform.harness.matrix import runs
from specconform.harness.products import registry, releases

ROOT = Path(__file__).resolve().parents[2]
_FINAL = re.compile(r"\d+(?:\.\d+)*(?:\.post\d+)?")


@dataclass(frozen=True)
class Engine:
    """How one engine's releases are judged: its registry package, its product, and, with ``{version}`` and
    ``{series}`` (major.minor) standing for the release, the tox environment that judges it and its report folder."""

    package: str
    product: str
    tox_env: str
    report: str


ENGINES = {
    "vllm": Engine("vllm", "vllm-mrv2", "vllm-mrv2-{series}", "vllm-{series}-mrv2-cpu"),
    "sglang": Engine("sglang", "sglang", "sglang-{version}", "sglang-{version}"),
    # judged at its API: tox -e transformers installs the newest release, so every release is taught
    "transformers": Engine("transformers", "transformers", "transformers", "transformers-{version}"),
}


class _Anchors(html.parser.HTMLParser):
    """The anchors of a PEP 503 page: ``(text, yanked)``."""

    def __init__(self):
        super().__init__()
        self.files: list[tuple[str, bool]] = []
        self._yanked: bool | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._yanked = "data-yanked" in dict(attrs)

    def handle_data(self, data):
        if self._yanked is not None and data.strip():
            self.files.append((data.strip(), self._yanked))
            self._yanked = None


def index_versions(text: str, package: str) -> list[str]:
    """The final releases an index names for ``package`` (yanked files and pre-releases left out), each once, from
    its PEP 691 JSON or PEP 503 HTML; a ``ValueError`` when the text is neither or names none."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        data = json.loads(text)
        files = [(f["filename"], bool(f.get("yanked"))) for f in data.get("files", [])]
    else:
        parser = _Anchors()
        parser.feed(text)
        files = parser.files
    stem = re.escape(package).replace("_", "[-_.]").replace("\\-", "[-_.]")
    pattern = re.compile(rf"{stem}-([^-]+?)(?:-[^-]+-[^-]+-[^-]+\.whl|\.tar\.gz|\.zip)", re.IGNORECASE)
    versions = set()
    for name, yanked in files:
        found = pattern.fullmatch(name)
        if found and not yanked and _FINAL.fullmatch(found.group(1)):
            versions.add(found.group(1))
    if not versions:
        raise ValueError(f"the index names no final release of {package!r} ({len(files)} files read)")
    return sorted(versions, key=runs.release_key)


def newest(text: str, package: str) -> str:
    """The newest final release ``text`` (a registry index) names for ``package``."""
    return index_versions(text, package)[-1]


def judged(engine: Engine, version: str, engines_dir: Path) -> bool:
    """Whether the matrix built from ``engines_dir`` has a row of the engine's product at ``version``."""
    products_dir = engines_dir.parent.parent / "harness" / "products"
    rows = runs.rows(engines_dir, products_dir if products_dir.is_dir() else None)
    return any(row.product == engine.product and row.version == version for row in rows)


def taught(engine: Engine, version: str) -> bool:
    """Whether the engine's adapter judges ``version``: named in its releases.yaml, or any release where the product
    has none (an API-level product)."""
    if registry.product(engine.product).record.releases is None:
        return True
    return version in releases.taught(engine.product)


def plan(name: str, index_text: str, engines_dir: Path) -> dict:
    """What the job does for engine ``name`` given its registry index (see the module's docstring)."""
    engine = ENGINES[name]
    version = newest(index_text, engine.package)
    step = {"engine": name, "version": version}
    if judged(engine, version, engines_dir):
        return {**step, "action": "none"}
    if not taught(engine, version):
        return {
            **step,
            "action": "teach",
            "message": f"{name} {version} has no cell in the matrix, and {engine.product}'s adapter is not taught it: "
            f"add its range to harness/products/{engine.product}/releases.yaml (and its tox environment)",
        }
    fields = {"version": version, "series": releases.series(version)}
    tox_env, report = engine.tox_env.format(**fields), engine.report.format(**fields)
    return {
        **step,
        "action": "judge",
        "tox_env": tox_env,
        "report": f"reports/engines/{report}",
        "branch": f"matrix/{name}-{version}",
        "title": f"matrix: {name} {version}",
        "body": body(name, version, tox_env, report),
    }


def body(name: str, version: str, tox_env: str, report: str) -> str:
    """The pull request's description: what was judged, how, and what a reviewer checks before merging."""
    return "\n".join(
        [
            f"{name} {version} appeared in the registry and the matrix had no cell for it, so the scheduled workflow "
            f"judged it (`tox -e {tox_env}`) into `reports/engines/{report}/` and regenerated the matrix "
            "(`specconform matrix`).",
            "",
            "Before merging:",
            f"- read the run's `summary.md` under `reports/engines/{report}/`: an unexpected failure is a regression "
            "or a new finding, and needs its expectation entry, cause and proof before it is published;",
            f"- add a `README.md` to `reports/engines/{report}/` (engine, code path, device, command, findings), as "
            "every published folder has, and list the folder in the product's `reports`;",
            "- check the matrix's history line for the engine (fixed in, regressed in).",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="plan the re-judging of each engine's newest release")
    sub = parser.add_subparsers(dest="command", required=True)
    planned = sub.add_parser("plan", help="one JSON line per engine: its newest release and what the job does")
    planned.add_argument("--index", action="append", required=True, metavar="ENGINE=FILE")
    planned.add_argument("--engines-dir", type=Path, default=ROOT / "reports" / "engines")
    args = parser.parse_args(argv)
    for item in args.index:
        name, _, path = item.partition("=")
        if name not in ENGINES or not path:
            parser.error(f"--index {item!r}: expected ENGINE=FILE with ENGINE one of {', '.join(ENGINES)}")
        print(json.dumps(plan(name, Path(path).read_text(), args.engines_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
