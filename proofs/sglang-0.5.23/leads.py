"""A lead about SGLang 0.5.23's Triton chain sampler, run on its own kernel (``harness.adapters.sglang``).

    TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= PYTHONPATH=. python proofs/sglang-0.5.23/leads.py

The degenerate residual returns the last vocabulary id (``kernels/ops/speculative/reject_sampling.py`` l.200-205):
with draft probabilities equal to the target's and a draft outside both supports, the draft is rejected and the
residual ``(p - q)+`` has no mass, so the kernel emits ``VOCAB_SIZE - 1``, which p gives probability 0. Not published:
the case needs a draft outside q's support, which SGLang's drafters never hand over. Prints what SGLang emitted.
"""

from __future__ import annotations

import numpy as np

from harness.adapters.sglang import make
from harness.oracle import rejection as rs


def main() -> None:
    engine = make()
    logits = np.array([[0.0, 0.0, -np.inf, -np.inf], [0.0, 0.0, 0.0, 0.0]])  # p = [1/2, 1/2, 0, 0] at the draft row
    q = np.array([[0.5, 0.5, 0.0, 0.0]])  # q = p; the draft, id 2, lies outside both supports
    case = rs.RejectionCase(logits, draft_token_ids=[2], num_draft_tokens=[1], temperature=[1.0], draft_probs=q)
    tokens, _ = engine.rejection_sample(case)
    print(f"degenerate residual: emitted {tokens[0].tolist()} (vocabulary size {case.vocab_size})")


if __name__ == "__main__":
    main()
