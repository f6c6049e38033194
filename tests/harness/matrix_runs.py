"""Published run folders of a made-up engine, ``toy``, at three releases, for the tests of ``specconform matrix``: what
each release's records say is set out in ``RELEASES``, so that a test reads its expectations from here, not from the
code under test.

Each release judges three claimed classes, one check each, on every requirement of the class (the registry's):
- ``tb.core``: TB-MARK-1 FAILs in 0.9.0 (unexpected), PASSes in 0.10.0 and FAILs again, same fingerprint, in 0.11.0;
- ``tb.multitoken``: TB-FORCE-2 PASSes in 0.9.0, FAILs in 0.10.0 (mode ``restarts``) and in 0.11.0 (modes ``restarts``
  and ``skips``, in two checks);
- ``rs.seeded``: RS-RNG-1 FAILs in 0.9.0 (expected: a published finding), is not judged in 0.10.0 (NOT_RUN) and PASSes
  in 0.11.0;
- ``ac.count`` is not claimed.
Releases are ordered as numbers (0.9 < 0.10 < 0.11), not as text. Folder ``toy-0.10`` also holds an older run of
0.10.0, in which TB-MARK-1 still FAILs: the matrix reads the latest. A second product, ``gizmo``, has one release.
"""

from __future__ import annotations

import json
from pathlib import Path

from specconform.harness import checks, reports, spec
from specconform.harness.schemas import RunRecord

REGISTRY_CLASSES = spec.classes()

# release -> {requirement: (status, [fingerprint modes], expected)}; every other requirement of a class: PASS
RELEASES = {
    "0.9.0": {
        "TB-MARK-1": ("FAIL", ["left-a-forced-row-free"], False),
        "RS-RNG-1": ("FAIL", ["depends-on-batch"], True),
    },
    "0.10.0": {
        "TB-FORCE-2": ("FAIL", ["restarts"], True),
        "RS-RNG-1": ("NOT_RUN", [], False),
        "RS-RNG-2": ("NOT_RUN", [], False),
        "RS-RNG-3": ("NOT_RUN", [], False),
    },
    "0.11.0": {
        "TB-MARK-1": ("FAIL", ["left-a-forced-row-free"], True),
        "TB-FORCE-2": ("FAIL", ["restarts", "skips"], True),
    },
}
FOLDERS = {"0.9.0": "toy-0.9", "0.10.0": "toy-0.10", "0.11.0": "toy-0.11"}
STAMPS = {"0.9.0": "20260101-000000", "0.10.0": "20260103-000000", "0.11.0": "20260102-000000"}
OLDER_STAMP = "20260101-120000"  # the older run of 0.10.0, which the matrix does not read
CLAIMED = ["rs.seeded", "tb.core", "tb.multitoken"]


def _record(engine: str, version: str, check: str, cls: str, statuses: dict, extra_check: bool = False) -> dict:
    """One check's record over every requirement of ``cls``; ``statuses``: {requirement: (status, modes, expected)}
    (a failure with two modes records the second in a second check, ``extra_check``)."""
    results = {}
    for rid in REGISTRY_CLASSES[cls]:
        status, modes, expected = statuses.get(rid, ("PASS", [], False))
        mode = (modes[1] if extra_check else modes[0]) if modes else ""
        results[rid] = {
            "status": status,
            "cases": 3 if status in ("PASS", "FAIL") else 0,
            "evidence": f"{rid} {status}",
            "fingerprint": f"{rid}/{mode}" if status == "FAIL" else "",
            "expected_status": "FAIL" if expected else None,
        }
    failed = [rid for rid, r in results.items() if r["status"] == "FAIL"]
    statuses_seen = {r["status"] for r in results.values()}
    status = "FAIL" if failed else ("PASS" if statuses_seen == {"PASS"} else "NOT_RUN")
    return {
        "check": check,
        "cls": cls,
        "requirements": list(results),
        "status": status,
        "message": f"{status}: {check}",
        "results": results,
        "engine": engine,
        "engine_spec": "toy:make",
        "engine_version": f"{engine.split('-')[0]}-{version} torch-2.13.0+cpu cpu",
        "device": "cpu",
        "profile": engine,
        "claimed_classes": CLAIMED,
        "seed": 1,
        "duration_s": 0.1,
        "reproduce": f"specconform run --check {check}",
        "unexpected": [rid for rid in failed if not statuses[rid][2]],
        "violated": failed,
    }


def records(engine: str, version: str, statuses: dict) -> list[RunRecord]:
    out = [_record(engine, version, f"{cls}/all", cls, statuses) for cls in CLAIMED]
    if any(len(modes) > 1 for _, modes, _ in statuses.values()):
        out.append(_record(engine, version, "tb.multitoken/again", "tb.multitoken", statuses, extra_check=True))
    unclaimed = _record(engine, version, "ac.count/all", "ac.count", {})
    for result in unclaimed["results"].values():
        result.update(status="NOT_CLAIMED", cases=0)
    out.append({**unclaimed, "status": "NOT_CLAIMED", "message": "not claimed by profile toy"})
    return [RunRecord.model_validate(record) for record in out]


def publish(run_dir: Path, recs: list[RunRecord]) -> None:
    """A published run folder: results.jsonl and the reports ``specconform report`` renders from it."""
    run_dir.mkdir(parents=True)
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in recs))
    reports.write_all(run_dir, recs, checks.uncovered_requirements())


def build(root: Path) -> tuple[Path, Path]:
    """The published runs and product records under ``root``: (engines folder, products folder)."""
    engines, products = root / "reports" / "engines", root / "products"
    for version, statuses in RELEASES.items():
        publish(engines / FOLDERS[version] / STAMPS[version], records("toy", version, statuses))
    older = {"TB-MARK-1": ("FAIL", ["left-a-forced-row-free"], False)}
    publish(engines / FOLDERS["0.10.0"] / OLDER_STAMP, records("toy", "0.10.0", older))
    publish(engines / "gizmo-2.0" / "20260101-000000", records("gizmo", "2.0", {}))
    for name, folders in (("toy", list(FOLDERS.values())), ("gizmo", ["gizmo-2.0"])):
        (products / name).mkdir(parents=True)
        (products / name / "product.yaml").write_text(
            json.dumps(
                {
                    "name": name,
                    "description": f"the {name} engine",
                    "engines": ["toy:make"],
                    "judge": [],
                    "reports": folders,
                }
            )
        )
    return engines, products
