"""Golden vectors: generated from the oracle, checked in under ``specs/vectors/``.

``codec`` (the JSON form of floats, matrices and rejection cases), ``scenarios`` (budget scenarios run beside the
oracle, which generated cases depend on too), one generator per kind (``budget``, ``rejection``, ``counting``),
``schema`` (the source files under ``golden/`` that the generators read) and ``files`` (rendering, writing and the
staleness check). This face only re-exports.
"""

from .budget import budget_vectors
from .codec import FORMAT_VERSION, case_from_json, decode_float, encode_float, encode_matrix
from .counting import counting_vectors
from .files import GENERATORS, entry_preconditions, render, stale, with_preconditions, write_all
from .rejection import exact_case, rejection_vectors
from .scenarios import SlotStep, budget_scenario

__all__ = [
    "FORMAT_VERSION",
    "GENERATORS",
    "SlotStep",
    "exact_case",
    "budget_scenario",
    "budget_vectors",
    "case_from_json",
    "counting_vectors",
    "decode_float",
    "encode_float",
    "encode_matrix",
    "entry_preconditions",
    "rejection_vectors",
    "render",
    "stale",
    "with_preconditions",
    "write_all",
]
