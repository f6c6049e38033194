"""A lead about lmdeploy 0.16.0's verifier, run on its own code (``specconform.harness.adapters.lmdeploy``): a mixed
batch with more than one draft per request takes each request's greedy policy from another request's row.

    TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= PYTHONPATH=.:<lmdeploy 0.16.0> python proofs/lmdeploy-0.16.0/leads.py

``spec_agent.py`` hands ``rejection_sample`` the sampling inputs of the draft rows (K per request, lines 486-492), and
``reject_sampler.py`` takes its greedy mask from them (``top_k == 1``, line 151): K flags per request. Its kernels
read the flag at the request's index (lines 250 and 299), which is draft row ``i`` and belongs to request ``i // K``.
With K = 2, a request sampled at temperature 1 in slot 1 after a greedy request in slot 0 reads the greedy request's
flag, and its drafts are verified greedily.

Shown with p = (0.55, 0.45, 0, 0) and drafts of token 1. Verified by the acceptance rule, the first draft is accepted
with probability 0.45 (RS-PROB-1). Verified greedily it is never accepted. The request is run alone and in slot 1 after
a greedy request. lmdeploy 0.17.0 takes one flag per request from the bonus rows, asserted to be of shape
(batch_size,) (``reject_sampler.py`` lines 51-58). Run there (PYTHONPATH=.:<lmdeploy 0.17.0>), both counts agree.

Not published as a failure: the harness's mixed batches (``rejection/acceptance-rule``) give every request one draft,
where the draft rows and the requests coincide. Prints the two counts.
"""

from __future__ import annotations

import numpy as np

from specconform.harness.adapters.lmdeploy import make
from specconform.specs.interface import RejectionCase

TRIALS = 200
K = 2


def accepted(engine, case: RejectionCase, slot: int) -> int:
    """How many of ``TRIALS`` verifications of ``case`` accept the first draft of request ``slot``."""
    return sum(int(engine.rejection_sample(case)[0][slot, 0] == 1) for _ in range(TRIALS))


def main() -> None:
    engine = make()
    rows = np.tile(np.log([0.55, 0.45, 1e-30, 1e-30]), (K + 1, 1)).astype(np.float32)  # [K + 1, V]
    alone = RejectionCase(rows, [1] * K, [K], [1.0])
    mixed = RejectionCase(np.concatenate([rows, rows]), [1] * (2 * K), [K, K], [0.0, 1.0])
    print(
        f"{engine.version}: first draft (p = 0.45) accepted {accepted(engine, alone, 0)} of {TRIALS} alone, "
        f"{accepted(engine, mixed, 1)} of {TRIALS} in slot 1 after a greedy request (K = {K})"
    )


if __name__ == "__main__":
    main()
