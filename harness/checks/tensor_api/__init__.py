"""Checks of the tensor-level API (thinking-budget.md section 10, rejection-sampling.md section 9,
accepted-tokens.md section 4): the engine's own entry points (``engine.tensor_api``, capability ``tensor-api``)
called with each hostile argument must raise a ValueError naming it and change nothing; legal values at the
edges of their ranges must be accepted and judged as the oracle judges them. One module per entry point: the
budget state (``budget``), the sampler (``rejection``), counting and metrics (``counting``); ``common`` holds what
they share (building tensors, judging a rejected or an accepted call).

The budget state's and the sampler's tensors are built with ``torch`` on ``tensor_api.device``, except the draft
counts that the spec asks to be range-checked only where that costs no device synchronisation (CPU tensors);
counting and metrics tensors are CPU tensors.
"""

from . import budget, counting, rejection  # noqa: F401  importing a module declares its check
