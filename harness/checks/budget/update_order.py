"""TB-BATCH-1's order of an update's parts, told apart from what each part does.

TB-BATCH-1 says an update is applied as its ``removed``, then its ``added``, then its ``moved`` (in list order).
TB-BATCH-2 and TB-BATCH-3 say what one move does, and build on TB-BATCH-1. A minimal case whose failure needs a batch
operation names by its rows alone the move it met (a SWAP: TB-BATCH-3), yet an engine that applies an update's parts
in another order fails on exactly such a case: it swaps a slot before the request the same update adds there has
arrived, or rejects a valid update whose moves read slots that the same update's additions fill. The move itself does
what TB-BATCH-2 or TB-BATCH-3 asks; the order does not.

So a failing minimal case that holds an update of more than one part has a twin (``parts_twin``): each such update
split into its parts, each applied as an update of its own in TB-BATCH-1's order, in steps of their own that commit
nothing before the step the update came with. Nothing is committed between the parts, so every request's state at
the original step is the one TB-BATCH-1 gives the whole update, and a conforming engine forces the same rows. An
engine that replays the twin exactly while it fails the case applies every part right and their order wrong: its
failure is TB-BATCH-1's, the lower requirement its minimal case fails (RUN-FINDING-1), and the move's requirement
reads BLOCKED. An engine whose move is wrong fails the twin too, and the failure stays the move's.
"""

from __future__ import annotations

SPEC_ORDER = ("removed", "added", "moved")


def _parts(update: dict) -> list[dict]:
    """The non-empty parts of ``update`` (golden-vector format), each an update of its own, in TB-BATCH-1's order."""
    empty: dict[str, list] = {part: [] for part in SPEC_ORDER}
    return [{**update, **empty, part: update[part]} for part in SPEC_ORDER if update[part]]


def _idle_step(update: dict) -> dict:
    """A step that applies ``update`` and commits nothing: no drafts, every row of its batch left empty (-1)."""
    rows = update["batch_size"]
    return {"update": update, "num_draft_tokens": [0] * rows, "draft_token_ids": [], "sampled_token_ids": [[-1]] * rows}


def parts_twin(vector: dict) -> dict | None:
    """``vector`` (golden-vector format) with every update of more than one part split into its parts
    (``removed``, ``added``, ``moved``), all but the last applied in steps that commit nothing before the step the
    update came with, which applies the last. TB-BATCH-1 defines an update as its parts applied in that order, so a
    conforming engine forces the same rows at every step of ``vector``'s. None where no update has two parts."""
    steps, split = [], False
    for step in vector["steps"]:
        parts = _parts(step["update"]) if step["update"] else []
        if len(parts) > 1:
            split = True
            steps += [_idle_step(part) for part in parts[:-1]]
            step = {**step, "update": parts[-1]}
        steps.append({key: value for key, value in step.items() if key != "expected_forced"})
    return {**vector, "steps": steps} if split else None
