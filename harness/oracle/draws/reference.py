"""Draw scheme ``reference``: the spec's own counter-based draws (specs/rejection-sampling.md RS-RNG-1..3).

Its definition lives in ``specconform.harness.oracle.rng`` (lowbias32 hashes of seed, position, purpose and index);
this module names it as a scheme beside the engines' own.
"""

from __future__ import annotations

import numpy as np

from .. import rng

NAME = "reference"
FOLLOWS = ("specs/rejection-sampling.md: RS-RNG-3 (specconform.harness.oracle.rng)",)


def acceptance_uniform(seed: int, position: int) -> float:
    """The acceptance uniform of the draft at ``position``: a float in [0, 1), a multiple of 2^-24."""
    return rng.uniform(seed, position)


def exponentials(seed: int, position: int, vocab_size: int) -> np.ndarray:
    """The Exp(1) race noise ``[vocab_size]`` float64 for sampling the token at ``position``."""
    return rng.exponentials(seed, position, vocab_size)
