"""Two leads about SGLang 0.5.23's verification, run on its own code (``specconform.harness.adapters.sglang``).

    TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= PYTHONPATH=. python proofs/sglang-0.5.23/leads.py

- The degenerate residual returns the last vocabulary id (``kernels/ops/speculative/reject_sampling.py`` l.200-205):
  with draft probabilities equal to the target's and a draft outside both supports, the draft is rejected and the
  residual ``(p - q)+`` has no mass, so the kernel emits ``VOCAB_SIZE - 1``, which p gives probability 0. Not
  published: the case needs a draft outside q's support, which SGLang's drafters never hand over.
- SGLang's CPU and XPU backends verify every request greedily (``srt/speculative/eagle_utils.py`` l.485-500):
  ``_verify_uses_greedy`` returns True for a batch of sampled requests whenever ``is_cpu`` or ``is_xpu`` is set,
  even with rejection sampling on, and ``eagle_sample`` then commits the argmax through ``verify_tree_greedy`` (on
  XPU the Triton kernel run here). A sampled request whose draft the target gives probability 0.4 against q's 0.9 is
  then never accepted (RS-PROB-1: accepted with probability 0.44) and always emits the argmax. Not published: the
  CPU backend's greedy kernel is an ``sgl_kernel`` CPU op no package ships, and the XPU backend cannot run here.

Prints what SGLang's code returned.
"""

from __future__ import annotations

import numpy as np

from specconform.harness.adapters.sglang import make
from specconform.specs.interface import RejectionCase


def degenerate_residual(engine) -> None:
    logits = np.array([[0.0, 0.0, -np.inf, -np.inf], [0.0, 0.0, 0.0, 0.0]])  # p = [1/2, 1/2, 0, 0] at the draft row
    q = np.array([[0.5, 0.5, 0.0, 0.0]])  # q = p; the draft, id 2, lies outside both supports
    case = RejectionCase(logits, draft_token_ids=[2], num_draft_tokens=[1], temperature=[1.0], draft_probs=q)
    tokens, _ = engine.rejection_sample(case)
    print(f"degenerate residual: emitted {tokens[0].tolist()} (vocabulary size {case.vocab_size})")


def greedy_on_cpu_and_xpu(engine) -> None:
    eu = engine.eagle.eagle_utils
    for platform in ("cpu", "xpu", "hip", "cuda"):
        flags = {f"is_{name}": name == platform for name in ("cpu", "hip", "xpu")}
        greedy = eu._verify_uses_greedy(is_all_greedy=False, use_rejection_sampling=True, **flags)
        print(f"_verify_uses_greedy(sampled batch, rejection sampling on, {platform}): {greedy}")
    # what the XPU backend's greedy branch commits for a sampled request: p = [0.4, 0.6] at the draft row
    logits = np.log(np.array([[0.4, 0.6], [0.5, 0.5]]))
    layout = engine._chain_layout(np.array([[0]]))  # the draft, id 0, drawn from q = [0.9, 0.1]
    engine._verify_greedy(engine.torch.tensor(logits, dtype=engine.torch.float32), layout)
    n = int(layout["accept_token_num"][0]) + 1
    emitted = layout["predicts"][layout["accept_index"][0, :n].long()].tolist()
    print(f"greedy branch on a sampled request, draft 0 with p 0.4 and q 0.9: emitted {emitted} (always)")


def main() -> None:
    engine = make()
    degenerate_residual(engine)
    greedy_on_cpu_and_xpu(engine)


if __name__ == "__main__":
    main()
