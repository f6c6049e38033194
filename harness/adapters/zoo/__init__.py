"""The bug zoo: engines with one deliberate bug each, every one standing for a bug a real engine shipped. The
harness must catch each one on the requirement it breaks (``specconform zoo``, ``--engine zoo:<mutant>``).

- ``registry``: every mutant, the requirement it breaks, its profile variants, in listing order;
- ``engine``: the oracle with one bug (``MutantEngine``), and ``make_mutant`` that builds any mutant by name;
- ``budget``, ``rejection``, ``counting``: the broken rules of each kernel;
- ``sampler``: a vectorised NumPy rejection sampler with one bug (the statistical mutants);
- ``tensor_api``: the reference engine whose tensor-level entry points carry one bug.
"""

from .engine import MutantEngine, make_mutant, needs_torch
from .registry import MUTANTS, SAMPLER_MUTANTS, Mutant
from .sampler import MUTANT_REQUIREMENTS, REJECTION_MUTANTS, mutant_sampler

__all__ = [
    "MUTANTS",
    "MUTANT_REQUIREMENTS",
    "REJECTION_MUTANTS",
    "SAMPLER_MUTANTS",
    "Mutant",
    "MutantEngine",
    "make_mutant",
    "mutant_sampler",
    "needs_torch",
]
