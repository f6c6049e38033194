"""Two ``specconform bench`` runs compared shape by shape: a regression only beyond the measured spread.

``specconform bench`` (``harness/bench/``) times each shape ``REPEATS`` times, interleaved across
implementations, and records every repeat (``times_ms``) or, for the budget step, the median and its
spread (largest / smallest repeat). Repeats of one run differ by that spread on a quiet GPU already, so a
fixed percentage either cries wolf on noisy shapes or misses a slowdown on steady ones. Here a median is
called **regressed** when ``new / old > band``, with ``band = max(spread_old, spread_new, 1 + min_change)``:
slower than the largest repeat-to-repeat variation either run measured for that shape and implementation,
and than ``min_change`` (default 5 %). **Improved** is the mirror image (``new / old < 1 / band``). A
series without a recorded spread (older runs, and the secondary columns of the budget step) is shown but
never judged. Only specconform's kernels (``ours*``) can fail the gate; its PyTorch path
(``plain_torch``, the CPU fallback) and the peers are shown for context.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MIN_CHANGE = 0.05


@dataclass(frozen=True)
class Series:
    """One implementation's time on one shape in one run: the median (``unit``), the spread (largest /
    smallest repeat; ``None`` when the run did not record it) and the repeats when recorded."""

    median: float
    spread: float | None
    repeats: tuple[float, ...] = ()
    unit: str = "ms"


@dataclass(frozen=True)
class Change:
    shape: str
    implementation: str
    old: Series
    new: Series
    band: float | None  # None: a run lacks the spread, nothing is judged

    @property
    def ratio(self) -> float:
        return self.new.median / self.old.median

    @property
    def verdict(self) -> str:
        """``regressed``, ``improved``, ``within spread`` or ``not judged`` (no spread recorded)."""
        if self.band is None:
            return "not judged"
        if self.ratio > self.band:
            return "regressed"
        if self.ratio < 1 / self.band:
            return "improved"
        return "within spread"

    @property
    def gated(self) -> bool:
        """Whether this is one of specconform's kernels (a regression of it fails the gate)."""
        return self.implementation.startswith("ours")


def shape_name(row: dict) -> str:
    """A shape's name, the same in every run: its family and parameters."""
    if row["family"] == "budget":
        return f"budget B={row['B']} K={row['K']}"
    return (
        f"{row['family']} B={row['B']} K={row['K']} V={row['V']} {row['dtype']} "
        f"{'q' if row['draft_probs'] else 'no-q'} {row['mode']}"
    )


def series(results: dict) -> dict[str, dict[str, Series]]:
    """``{shape: {implementation: Series}}`` of one bench run (the parsed ``bench-*.json``)."""
    out: dict[str, dict[str, Series]] = {}
    for row in results.get("rejection", []):
        found = {}
        if "times_ms" in row:
            for name, times in row["times_ms"].items():
                found[name] = Series(statistics.median(times), max(times) / min(times), tuple(times))
        else:  # before repeats were recorded: medians only
            found = {
                key[: -len("_ms")]: Series(value, None)
                for key, value in row.items()
                if key.endswith("_ms") and key != "floor_ms" and isinstance(value, float)
            }
        out[shape_name(row)] = found
    for row in results.get("budget", []):
        found = {
            key[: -len("_us")]: Series(value, None, unit="us")
            for key, value in row.items()
            if key.endswith("_us") and isinstance(value, float)
        }
        if "ours" in found and "ours_spread" in row:
            found["ours"] = Series(row["ours_us"], row["ours_spread"], unit="us")
        out[shape_name(row)] = found
    return out


def compare(old: dict, new: dict, min_change: float = DEFAULT_MIN_CHANGE) -> list[Change]:
    """Every (shape, implementation) both runs measured, in the new run's order."""
    before, after = series(old), series(new)
    changes = []
    for shape, implementations in after.items():
        for name, now in implementations.items():
            then = before.get(shape, {}).get(name)
            if then is None or then.median <= 0:
                continue
            band = None
            if then.spread is not None and now.spread is not None:
                band = max(then.spread, now.spread, 1 + min_change)
            changes.append(Change(shape, name, then, now, band))
    return changes


def resolve(path: str | Path, exclude: Path | None = None) -> Path | None:
    """A bench JSON file, or the newest ``bench-*.json`` in a folder other than ``exclude``; ``None``
    when there is none."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        return None
    found = sorted(p for p in path.glob("bench-*.json") if exclude is None or p.resolve() != exclude.resolve())
    return found[-1] if found else None


def load(path: Path) -> dict:
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a bench JSON file ({exc})") from None
    if not isinstance(results, dict) or "environment" not in results:
        raise ValueError(f"{path} is not a bench JSON file (no 'environment'; `specconform bench` writes them)")
    return results


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cell(s: Series) -> str:
    spread = f" ±{(s.spread - 1) * 100:.0f}%" if s.spread is not None else ""
    return f"{s.median:.4g} {s.unit}{spread}"


def markdown(old_path: Path, new_path: Path, min_change: float = DEFAULT_MIN_CHANGE) -> tuple[str, int]:
    """(the comparison as Markdown, regressions of specconform's own implementations). Raises
    ``ValueError`` when the runs are not comparable (another GPU)."""
    old, new = load(old_path), load(new_path)
    gpus = old["environment"].get("gpu"), new["environment"].get("gpu")
    if gpus[0] != gpus[1]:
        raise ValueError(
            f"{old_path} ran on {gpus[0]} and {new_path} on {gpus[1]}: times are comparable on one GPU only"
        )
    changes = compare(old, new, min_change)
    regressed = [c for c in changes if c.verdict == "regressed" and c.gated]
    improved = [c for c in changes if c.verdict == "improved" and c.gated]
    judged = [c for c in changes if c.gated and c.band is not None]
    lines = [
        f"# specconform bench-diff: {_count(len(regressed), 'regression')}, {_count(len(improved), 'improvement')}",
        "",
        f"{old_path} → {new_path} on {gpus[1]}. A median regressed when it grew by more than the larger spread "
        f"(largest / smallest of the repeats) of the two runs and more than {min_change:.0%}; "
        f"{len(judged)} of specconform's series were judged, {sum(c.gated for c in changes) - len(judged)} "
        "had no recorded spread.",
        "",
    ]
    for title, picked in (("Regressions", regressed), ("Improvements", improved)):
        if picked:
            lines += [f"## {title}", "", "| shape | implementation | before | after | ratio | band |"]
            lines.append("| --- | --- | --- | --- | --- | --- |")
            lines += [
                f"| {c.shape} | {c.implementation} | {_cell(c.old)} | {_cell(c.new)} | {c.ratio:.3f}× | {c.band:.3f} |"
                for c in picked
            ]
            lines.append("")
    peers = [c for c in changes if not c.gated and c.verdict in ("regressed", "improved")]
    if peers:
        lines += ["## Others that moved beyond their spread (peers and the PyTorch path; context, not gated)", ""]
        lines += [f"- {c.shape} {c.implementation}: {c.ratio:.3f}× ({_cell(c.old)} → {_cell(c.new)})" for c in peers]
        lines.append("")
    if not regressed:
        lines.append("No regression beyond the measured spread.")
    return "\n".join(lines).rstrip() + "\n", len(regressed)
