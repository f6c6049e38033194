"""What the tensor-level API checks share: tensors built on the engine's device, ids read back as plain ints, and
the judging of a call handed an illegal value (``rejects``) or legal values only (``accepts``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ...core import Tally

if TYPE_CHECKING:  # the light install has no torch: it is imported where it is used
    import torch

T = TypeVar("T")


def device_tensor(values, dtype: str, device: str = "cpu") -> torch.Tensor:
    """A torch tensor of ``values`` of the torch dtype named ``dtype`` (``"int64"``, ``"float32"``, ``"bool"``) on
    ``device``."""
    import torch

    return torch.tensor(values, dtype=getattr(torch, dtype), device=device)


def ill_typed(make: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``make(*args, **kwargs)`` with arguments outside its annotated types on purpose: a check's invalid input
    (an int for a sequence, a str for a ``Move``), which the engine must reject naming the field. The annotations
    state the legal values; this marks the places that leave them deliberately."""
    return make(*args, **kwargs)


def as_ints(values) -> list:
    """A tensor or sequence of ids (any nesting) as plain ints."""
    return np.asarray(values.cpu() if hasattr(values, "cpu") else values).astype(np.int64).tolist()


def rejects(tally: Tally, rid: str, case: str, argument: str | tuple[str, ...], call: Callable[[], object]) -> bool:
    """Run ``call``, which hands ``argument`` a value outside its legal range (a tuple: arguments that disagree,
    either of which the error may name): a ValueError that names it (case-insensitive) exercises ``rid``;
    anything else violates it. True when the call raised."""
    names = (argument,) if isinstance(argument, str) else argument
    try:
        call()
    except ValueError as exc:
        if any(name.lower() in str(exc).lower() for name in names):
            tally.exercised(rid)
        else:
            tally.violated(rid, "error-does-not-name-argument", f"{case}: rejected as {exc}")
        return True
    except Exception as exc:  # noqa: BLE001 - any other exception is no ValueError naming the argument
        tally.violated(rid, "not-a-value-error", f"{case}: raised {type(exc).__name__}: {exc}")
        return True
    tally.violated(rid, "invalid-value-accepted", f"{case} was accepted")
    return False


REJECTED = object()  # what ``accepts`` returns when a call with legal values raised


def accepts(tally: Tally, rid: str, case: str, call: Callable[[], object]):
    """Run ``call`` with legal values only: its result, or REJECTED (and ``rid`` violated) when it raised."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - a legal value must not raise at all
        tally.violated(rid, "legal-value-rejected", f"{case}: raised {type(exc).__name__}: {exc}")
        return REJECTED
