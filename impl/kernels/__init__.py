"""Triton kernels of the reference implementation (optional: needs ``triton``)."""

try:
    import triton  # noqa: F401

    HAS_TRITON = True
except ImportError:  # the PyTorch paths work without it
    HAS_TRITON = False
