"""Two leads about lmdeploy 0.18.0's pure-torch verifier, run on its own code
(``specconform.harness.adapters.lmdeploy``).

    PYTHONPATH=. python proofs/lmdeploy-0.18.0/leads.py

1. It accepts with ``>=`` (``pytorch/backends/default/rejection_sampling.py`` l.104): a draft the target gives
   probability 0 is accepted when the uniform is exactly 0. lmdeploy's uniforms are ``torch.rand`` float64 draws
   from the global generator, so the case is shown by handing it a uniform of 0 (``torch.rand`` replaced in the
   module for one call).
2. An empty residual yields id 0 (l.113-118: ``argmax`` of a residual without mass): shown with draft probabilities
   equal to the target's and a draft outside both supports.

Neither is published as a failure: (1) needs a uniform of exactly 0 (probability 2**-53 per draw) and (2) a draft
outside q's support, which lmdeploy's engine never hands its verifier (it passes no draft probabilities at all).
Prints one line per lead: what lmdeploy emitted.
"""

from __future__ import annotations

from unittest import mock

import torch

from specconform.harness.adapters.lmdeploy import import_lmdeploy


def main() -> None:
    lmdeploy = import_lmdeploy("torch")
    verifier = lmdeploy.verifier
    module = type(verifier).__module__
    logits = torch.tensor([[[0.0, float("-inf"), 0.0, 0.0]]])  # p = [1/3, 0, 1/3, 1/3]; the draft is id 1
    draft = torch.tensor([[1]])
    bonus = torch.tensor([2])
    zeros = mock.patch(f"{module}.torch.rand", lambda *a, **k: torch.zeros(*a[0], dtype=k.get("dtype")))
    with zeros:
        output, _, _ = verifier.forward(logits, draft, bonus, is_greedy=None)
    print(f"lead 1 (>=): p(draft)=0, u=0 -> emitted {output[0].tolist()} (accepted: {output[0, 0].item() == 1})")

    logits = torch.tensor([[[float("-inf"), float("-inf"), 0.0, 0.0]]])  # p = [0, 0, 1/2, 1/2]
    q = logits.softmax(-1)  # q = p, so the residual (p - q)+ has no mass
    draft = torch.tensor([[0]])  # q(draft) = 0: rejected
    output, _, _ = verifier.forward(logits, draft, bonus, is_greedy=None, draft_probs=q)
    print(f"lead 2 (empty residual): emitted {output[0].tolist()}; p of the emitted id is 0")


if __name__ == "__main__":
    main()
