"""The reference implementation's idiom: ``specconform.impl``'s public API, as its own users call it.

``impl`` is the engine here, so the exported file imports it (and nothing else of specconform): the budget through
``ThinkingBudgetState`` with ``BatchUpdate``/``AddedRequest``/``Move`` updates and int64 tensors, the sampler
through ``rejection_sample`` with the canonical layout's tensors. ``harness/adapters/reference.py`` drives it the
same way.
"""

NAME = "reference"
ENGINES = ("reference", "reference:cpu", "specconform-0.1")
LABEL = "specconform.impl (the reference implementation)"
RUN = "pytest FILE (specconform installed: pip install specconform)"
MULTI_TOKEN_MARKERS = True
DRAFTS = True

BUDGET_IMPORTS = """\
import torch

from specconform.impl import AddedRequest, BatchUpdate, Move, ThinkingBudgetState
"""

BUDGET_DRIVER = '''
class EngineBudget:
    """``specconform.impl.ThinkingBudgetState`` over ``max_num_reqs`` slots, on the CPU."""

    def __init__(self, start_token_ids, end_token_ids, max_num_reqs, scope, max_spec_len):
        self.state = ThinkingBudgetState(
            start_token_ids, end_token_ids, max_num_reqs, max_spec_len=max_spec_len, scope=scope
        )

    def sync_batch(self, update):
        """``update``: the step's batch update as a dict (``None``: unchanged), applied removed, added, moved."""
        if update is not None:
            update = BatchUpdate(
                batch_size=update["batch_size"],
                removed=tuple(update["removed"]),
                added=tuple(AddedRequest(a["index"], a["budget"], a["prompt_token_ids"]) for a in update["added"]),
                moved=tuple((src, dst, Move(kind)) for src, dst, kind in update["moved"]),
            )
        self.state.sync_batch(update)

    def forced_tokens(self, num_draft_tokens, draft_token_ids):
        """The forced id of each logits row ``[B + sum(K)]`` (-1: free)."""
        forced = self.state.forced_tokens(
            torch.tensor(num_draft_tokens, dtype=torch.int64), torch.tensor(draft_token_ids, dtype=torch.int64)
        )
        return forced.tolist()

    def update_state(self, rows):
        """Commit each slot's tokens: ``rows`` one list per slot, as ``[B, W]`` int64 padded with -1."""
        width = max((len(row) for row in rows), default=1)
        padded = [list(row) + [-1] * (width - len(row)) for row in rows]
        self.state.update_state(torch.tensor(padded, dtype=torch.int64).reshape(len(rows), width))
'''

REJECTION_IMPORTS = """\
import torch

from specconform.impl import rejection_sample
"""

REJECTION_DRIVER = '''
def engine_rejection_sample(case):
    """``specconform.impl.rejection_sample`` on the case's tensors: ``(token_ids [B, max K + 1], num_emitted [B])``
    as lists."""

    def tensor(values, dtype):
        return None if values is None else torch.tensor(values, dtype=dtype)

    out = rejection_sample(
        tensor(case["target_logits"], torch.float32),
        tensor(case["draft_token_ids"], torch.int64),
        tensor(case["num_draft_tokens"], torch.int64),
        draft_probs=tensor(case["draft_probs"], torch.float32),
        temperature=tensor(case["temperature"], torch.float32),
        seeds=tensor(case["seeds"], torch.int64),
        positions=tensor(case["positions"], torch.int64),
        forced_token_ids=tensor(case["forced_token_ids"], torch.int64),
        seeded=tensor(case["seeded"], torch.bool),
    )
    return out.token_ids.tolist(), out.num_emitted.tolist()
'''
