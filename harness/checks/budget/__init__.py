"""Thinking-budget checks, one module per kind: persistent-batch scenarios of each family compared with the oracle
row by row (``families``, driven by ``replay`` and, where they fail, minimised and attributed by ``minimal``);
single-request streams, whole generations judged by naive segmentation and markers with borders (``streams``); the
input contract of budgets, markers and batch updates (``inputs``); and forced logits (``logits``).

Scenarios come from the shared strategies (``specconform.harness.cases.budget``), which document why each is reachable
for a real engine. A failing scenario's minimal case, in the golden-vector format, is the evidence and the reproduction
(``specconform replay FILE --engine E``).
"""

# importing a module declares its checks; this order keeps the catalogue's declaration order
from . import families, streams, inputs, logits  # noqa: F401, I001
from .minimal import attributed_owner, judge_scenario, record_divergence
from .replay import describe, replay_scenario

__all__ = ["attributed_owner", "describe", "judge_scenario", "record_divergence", "replay_scenario"]
