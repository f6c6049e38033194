"""A hunt's record: how many draws it made, what each invariant saw, the first violation of each with its
reproduction, and the probability of a violation the draws would have missed; as JSON and as one Markdown line."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..core import UsageError
from .attribution import HuntFinding, hunt_findings

CONFIDENCE = 0.95


def missed_rate(draws: int, violations: int = 0, confidence: float = CONFIDENCE) -> float:
    """The one-sided upper confidence bound on the rate of violations per draw (Clopper-Pearson) after
    ``violations`` in ``draws`` independent draws. With none it is ``1 - (1 - confidence)^(1/draws)``, just under
    ``-ln(1 - confidence) / draws``: a defect that violates the invariant on at least this fraction of such draws
    shows at least once with probability ``confidence``. No draws bound nothing (1)."""
    if draws <= 0:
        return 1.0
    if violations == 0:
        return -math.expm1(math.log1p(-confidence) / draws)
    from scipy.stats import beta

    return float(beta.ppf(confidence, violations + 1, draws - violations)) if violations < draws else 1.0


@dataclass(frozen=True)
class InvariantResult:
    """One invariant over the hunt: the draws it judged, its violations, and ``missed_rate`` of those draws;
    ``outside``: why the engine's contract leaves it unjudged ("" where it is judged)."""

    name: str
    requirement: str
    says: str
    opportunities: int
    violations: int
    bound: float
    outside: str = ""


@dataclass(frozen=True)
class Violation:
    """The first violation of an invariant on one device: the launch and request, the request's seed and position
    (None where the engine draws from a generator of the launch), the request as a canonical case (``case_json``,
    ``draft_probs`` None in a one-hot launch), what the engine emitted, and whether running the request again
    (alone where the engine's draws allow, else its whole launch) emitted the same; ``minimal``: the smallest case
    the engine alone still breaks it on."""

    invariant: str
    device: str
    launch: int
    request: int
    row: int
    seed: int | None
    position: int
    case: dict
    token_ids: list[int]
    num_emitted: int
    replayed_alone: bool
    reproduced: bool
    # the case shrunk while the engine alone still breaks the invariant, with what it emits there
    # (``replay.minimal_case``: ``case``, ``token_ids``, ``num_emitted``); None where it did not shrink or cannot
    # replay alone
    minimal: dict | None = None


@dataclass(frozen=True)
class DeviceRun:
    """One device's part: its draws and launches, the seconds of its launches and of building its rows."""

    device: str
    draws: int
    launches: int
    rows_per_launch: int
    seconds: float
    setup_seconds: float


@dataclass(frozen=True)
class HuntRecord:
    """A hunt of ``engine`` (its ``version``) over ``devices``: ``draws`` in all within ``seconds`` (the slowest
    device's launches), each invariant's result, the first violations, and ``bound``: ``missed_rate(draws)`` at
    ``confidence``."""

    engine: str
    version: str
    vocab_size: int
    seed: int
    draws: int
    seconds: float
    confidence: float
    bound: float
    devices: list[DeviceRun]
    invariants: list[InvariantResult]
    violations: list[Violation] = field(default_factory=list)
    # how to run it again (``make_engine``'s spec) and the draw scheme the oracle judges its violations under
    # (``attribution.scheme_of``; None: its draws are its own): a record written before they were kept has neither
    engine_spec: str = ""
    scheme: str | None = None

    @property
    def violated(self) -> bool:
        return any(inv.violations for inv in self.invariants)

    def to_json(self) -> dict:
        return asdict(self)

    def findings(self, record_path: str | Path) -> list[HuntFinding]:
        """Its violations attributed by their cases (``attribution.hunt_findings``), replayed from ``record_path``."""
        return hunt_findings(self.to_json(), str(record_path))

    def markdown(self, record_path: str | Path) -> str:
        """The record for a report: ``markdown_line``, then one line per finding, each under the requirement its
        case violates, with the invariants that saw it, the case and the replay command."""
        lines = [self.markdown_line()]
        lines += [f"  - finding {finding.line()}" for finding in self.findings(record_path)]
        return "\n".join(lines) + "\n"

    def markdown_line(self) -> str:
        """One line for a report: the engine, its devices, the draws and seconds, and what they show."""
        where = f"on {len(self.devices)} device(s) ({', '.join(d.device for d in self.devices)})"
        head = f"- `{self.engine}` ({self.version}) {where}: {self.draws:,} draws in {self.seconds:.1f} s"
        unjudged = [f"{inv.name} ({inv.requirement})" for inv in self.invariants if inv.outside]
        if unjudged:
            head += f" ({', '.join(unjudged)} outside the engine's contract)"
        found = [f"{inv.name} ({inv.requirement}) {inv.violations:,}" for inv in self.invariants if inv.violations]
        if found:
            return (
                f"{head}, violations of the invariants: {', '.join(found)}; violations per draw at most "
                f"{self.bound:.3g} at {self.confidence:.0%} confidence (Clopper-Pearson); each filed under the "
                "requirement its case violates:"
            )
        alpha = 1 - self.confidence
        return (
            f"{head}, no violation: a defect violating an invariant on a fraction p >= {self.bound:.3g} of these "
            f"draws would have shown with probability {self.confidence:.0%} (p = 1 - {alpha:.2g}^(1/N) "
            f"< -ln({alpha:.2g})/N, N = {self.draws:,})"
        )


def _markdown_path(record: HuntRecord, report_dir: str | Path) -> Path:
    folder = Path(report_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"hunt-{re.sub(r'[^A-Za-z0-9._-]+', '-', record.engine).strip('-')}.md"


def write_record(record: HuntRecord, report_dir: str | Path) -> tuple[Path, Path]:
    """``hunt-<engine>.json`` (the record with its ``findings``) and ``hunt-<engine>.md`` (``markdown``) in
    ``report_dir``."""
    markdown_path = _markdown_path(record, report_dir)
    json_path = markdown_path.with_suffix(".json")
    data = record.to_json() | {"findings": [f.to_json() for f in record.findings(json_path)]}
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    markdown_path.write_text(record.markdown(json_path))
    return json_path, markdown_path


def record_from_json(data: dict) -> HuntRecord:
    """A ``HuntRecord`` from its JSON (``to_json``, with or without ``findings``, which are derived again)."""
    nested = {
        "devices": [DeviceRun(**d) for d in data["devices"]],
        "invariants": [InvariantResult(**i) for i in data["invariants"]],
        "violations": [Violation(**v) for v in data.get("violations") or []],
    }
    fields = {k: v for k, v in data.items() if k in HuntRecord.__dataclass_fields__}
    return HuntRecord(**(fields | nested))


def render(record_paths: list[str], report_dir: str | Path, engine_spec: str = "") -> list[Path]:
    """``hunt-<engine>.md`` in ``report_dir`` again from each hunt record (JSON) of ``record_paths``, its violations
    attributed anew; no engine runs, so no GPU is needed. ``engine_spec`` names the engine in the replay commands of
    a record written before its spec was kept. A ``UsageError`` names a file that is not a hunt record."""
    written = []
    for path in record_paths:
        try:
            record = record_from_json(json.loads(Path(path).read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--render {path}: not a hunt record ({type(exc).__name__}: {exc})") from None
        if engine_spec and not record.engine_spec:
            record = replace(record, engine_spec=engine_spec)
        markdown_path = _markdown_path(record, report_dir)
        markdown_path.write_text(record.markdown(path))
        written.append(markdown_path)
    return written
