"""Named draw schemes: the random draws of the spec (``reference``) and of engines whose draws have a public
definition, each in NumPy from that definition, sharing no code with the engine or with ``impl/``.

An engine's profile names its scheme (``draws:``, ``specconform.harness.profiles``), versioned with the engine: the
scheme is what that version of the engine draws, so a new engine version that changes its draws declares another.
Each scheme's module names the peer files and functions it follows (``FOLLOWS``); tests hold each against the
engine's own kernels (tests/harness/test_vllm_draws.py, test_sglang_draws.py) and against published known answers
(tests/unit/test_draw_schemes.py).
"""

from __future__ import annotations

from types import ModuleType

from . import flashinfer_philox, reference, sglang_seeded, vllm_mrv2

SCHEMES: dict[str, ModuleType] = {m.NAME: m for m in (reference, vllm_mrv2, sglang_seeded, flashinfer_philox)}


def names() -> tuple[str, ...]:
    return tuple(SCHEMES)


def validate(name: str, where: str) -> str:
    """``name`` when it is a known scheme; else a ValueError naming it, ``where`` it was given and the known ones."""
    if name not in SCHEMES:
        raise ValueError(f"{where}: draws must be one of {', '.join(SCHEMES)}; got {name!r}")
    return name


def scheme(name: str) -> ModuleType:
    """The module of scheme ``name`` (its functions, ``NAME`` and ``FOLLOWS``)."""
    return SCHEMES[validate(name, "draw scheme")]
