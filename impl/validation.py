"""Argument checks shared by the kernel API: every error names the argument, the value and what is allowed."""

from __future__ import annotations

import torch

INT32_MAX = 2**31 - 1
KINDS = ("integer", "floating", "bool")


def describe(value) -> str:
    """A short description of ``value`` for an error message (a tensor by dtype, shape and device)."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of dtype {value.dtype}, shape {tuple(value.shape)} on {value.device}"
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a NumPy (or other) array
        kind = f"{type(value).__module__}.{type(value).__name__}"
        return f"a {kind} of dtype {value.dtype}, shape {tuple(value.shape)}"
    text = " ".join(repr(value).split())
    return f"{text if len(text) <= 80 else text[:77] + '...'} of type {type(value).__name__}"


def require_tensor(name: str, value, kind: str, device: torch.device | None = None) -> torch.Tensor:
    """Return ``value`` if it is a ``torch.Tensor`` of ``kind`` dtype (``"integer"``: not bool; ``"floating"``;
    ``"bool"``) on ``device`` (when given); otherwise raise ValueError."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    if not isinstance(value, torch.Tensor):
        dtype_ok = False
    elif kind == "floating":
        dtype_ok = value.is_floating_point()
    elif kind == "bool":
        dtype_ok = value.dtype == torch.bool
    else:
        dtype_ok = not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
    if not dtype_ok:
        raise ValueError(f"{name} must be a torch.Tensor of {kind} dtype; got {describe(value)}")
    if device is not None and not _same_device(
        value.device, device if isinstance(device, torch.device) else torch.device(device)
    ):
        raise ValueError(f"{name} must be on {device} (where the other inputs are); got {describe(value)}")
    return value


def _same_device(a: torch.device, b: torch.device) -> bool:
    """``cuda`` and ``cuda:0`` name the same device when 0 is the current one."""
    if a == b:
        return True
    if a.type != b.type:
        return False
    current = torch.cuda.current_device() if a.type == "cuda" else 0
    return (a.index if a.index is not None else current) == (b.index if b.index is not None else current)


def require_int(name: str, value, low: int, high: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` (not bool) in ``[low, high]`` (``high=None``: unbounded)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {allowed}; got {describe(value)}")
    return value
