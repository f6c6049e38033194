"""Attribution by the minimal case: which requirement a budget failure belongs to, and which defect it is.

A check of batch bookkeeping that meets an engine whose section count restarts at every start marker
fails, but not because of the batch: its minimal case has no batch operation at all. Publishing that
failure under TB-BATCH-1 blames the engine twice for one defect, and names the wrong one. So after a
failing case is shrunk, its *features* are read off it (what it holds beyond one request stepping through
one section with one-token markers), and the failure goes to the most specific requirement of the
diverging row whose ``case_feature`` (``specs/requirements.yaml``) the minimal case holds, the most
elementary feature first (``FEATURE_ORDER``); requirements without a case feature are the basic ones, which
any case can isolate. When that owner is not a
requirement of the check, the check records the failure under the owner and its own requirement reads
BLOCKED, naming the finding.

A *finding* is one defect: the requirement that owns it (``finding_key`` adds the stage its minimal case
met it on). Reports group failed requirements of every check by finding (``finding_of``), so one defect
seen by six checks is published once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from specs.interface import BatchUpdate, Move

from .. import spec
from ..oracle import budget as tb

_REGISTRY = spec.load_registry()
# The most elementary rule first. A minimal case holds only what its failure needs (shrinking removed the
# rest), but a failure of an elementary rule needs the stage it was met on too: a start marker inside an open
# section must sit in some section, opened by the prompt or by the output, in a batch or not. So of the
# features a minimal case holds, the most elementary names the defect and the others the stage.
FEATURE_ORDER = (
    "misplaced-marker",
    "multi-token-markers",
    "prompt-opened",
    "re-opened-section",
    "drafts",
    "batch-ops",
)
CASE_FEATURES = frozenset(r.case_feature for r in _REGISTRY.values() if r.case_feature)
if set(FEATURE_ORDER) != CASE_FEATURES:
    raise ValueError(f"specs/requirements.yaml case features {sorted(CASE_FEATURES)} are not {sorted(FEATURE_ORDER)}")


def _ends_with(stream: Sequence[int], marker: Sequence[int], not_before: int) -> bool:
    """Whether ``stream`` ends with ``marker`` matched wholly at or after index ``not_before``."""
    n = len(marker)
    return len(stream) - n >= not_before and list(stream[-n:]) == list(marker)


def _stream_features(stream: Sequence[int], start: Sequence[int], end: Sequence[int]) -> set[str]:
    """``re-opened-section`` and ``misplaced-marker`` (a start marker inside an open section, or an end marker
    outside one) of one request's prompt and committed output, segmented naively."""
    found: set[str] = set()
    opened_at, sections = None, 0
    for i in range(1, len(stream) + 1):
        seen = stream[:i]
        if opened_at is None:
            if _ends_with(seen, start, 0):
                opened_at, sections = i, sections + 1
            elif _ends_with(seen, end, 0):
                found.add("misplaced-marker")
        elif _ends_with(seen, end, opened_at):
            opened_at = None
        elif _ends_with(seen, start, opened_at):
            found.add("misplaced-marker")
    if sections > 1:
        found.add("re-opened-section")
    return found


def case_features(vector: dict) -> frozenset[str]:
    """The features of a thinking-budget scenario in the golden-vector format: ``multi-token-markers``,
    ``prompt-opened`` (a prompt that leaves a section open or ends inside a marker), ``drafts``, ``batch-ops``
    (a removal, a move, or an add after the first step), ``re-opened-section`` and ``misplaced-marker``."""
    start, end = vector["start_token_ids"], vector["end_token_ids"]
    found: set[str] = set()
    if len(start) > 1 or len(end) > 1:
        found.add("multi-token-markers")
    live: dict[int, list[int]] = {}
    finished: list[list[int]] = []
    for index, step in enumerate(vector["steps"]):
        if step["update"] is not None:
            update = BatchUpdate.from_json(step["update"])
            if update.removed or update.moved or (index and update.added):
                found.add("batch-ops")
            for slot in update.removed:
                finished.append(live.pop(slot, []))
            for added in update.added:
                prompt = list(added.prompt_token_ids)
                probe = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), 0, prompt)
                if probe.in_section or probe.start_matched or probe.end_matched:
                    found.add("prompt-opened")
                if added.index in live:
                    finished.append(live[added.index])
                live[added.index] = prompt
            for src, dst, kind in update.moved:
                if kind is Move.SWAP:
                    live[src], live[dst] = live.get(dst, []), live.get(src, [])
                else:
                    if dst in live:
                        finished.append(live[dst])
                    live[dst] = live.pop(src, [])
        if any(step["num_draft_tokens"]):
            found.add("drafts")
        for slot, row in enumerate(step["sampled_token_ids"]):
            live.setdefault(slot, []).extend(t for t in row if t != -1)
    for stream in [*finished, *live.values()]:
        found |= _stream_features(stream, start, end)
    return frozenset(found)


def owner(row_requirements: Iterable[str], blame_order: Sequence[str], features: frozenset[str]) -> str | None:
    """The requirement a diverging row's failure belongs to: the most specific of ``row_requirements`` (in
    ``blame_order``) whose case feature ``features`` holds, before any basic requirement (one without a case
    feature); None when the row names no such requirement."""
    tagged = set(row_requirements)
    featured = [
        r
        for feature in FEATURE_ORDER
        if feature in features
        for r in blame_order
        if r in tagged and _REGISTRY[r].case_feature == feature
    ]
    basic = [r for r in blame_order if r in tagged and not _REGISTRY[r].case_feature]
    return next(iter(featured + basic), None)


def finding_key(requirement: str, features: Iterable[str]) -> str:
    """The name of one defect: the requirement its minimal case isolates, with the features of that case beside
    it (``on ...``: the stage it was met on, which differs from check to check and does not tell defects apart)."""
    own = _REGISTRY[requirement].case_feature if requirement in _REGISTRY else ""
    stage = sorted(set(features) & CASE_FEATURES - {own})
    return f"{requirement}" + (f" ({own})" if own else "") + (f" on {', '.join(stage)}" if stage else "")


def finding_of(key: str) -> str:
    """The defect a ``finding_key`` names, without the stage: what reports group failures by."""
    return key.split(" on ", 1)[0]
