"""Launching a Triton kernel through its compiled handle, so that an eager call pays for the driver
launch and not for the JIT's per-argument specialisation on every call."""

from __future__ import annotations

from triton.compiler import CompiledKernel


class CompiledLaunch:
    """The launches of one kernel for one launch key: the first call goes through Triton's JIT, which
    compiles (or finds) the kernel specialised on its arguments and launches it; later calls launch
    that compiled kernel directly. The caller's key must therefore fix everything the JIT specialises
    on: the dtype and 16-byte alignment of every tensor, the value of every integer, the grid, the
    constexprs and the warps. Under ``TRITON_INTERPRET=1`` (no compiled kernel) every call goes
    through the interpreter."""

    def __init__(self, kernel, grid: tuple[int, ...], num_warps: int, **constexprs):
        self.kernel, self.num_warps, self.constexprs = kernel, num_warps, constexprs
        self.grid = tuple(grid) + (1,) * (3 - len(grid))  # the compiled launcher reads three dimensions
        self.compiled: CompiledKernel | None = None
        self.constexpr_values: tuple = ()

    def __call__(self, *args) -> None:
        """Launch on the current stream with the kernel's runtime arguments ``args`` (in order)."""
        if self.compiled is None:
            launched = self.kernel[self.grid](*args, **self.constexprs, num_warps=self.num_warps)
            if isinstance(launched, CompiledKernel):  # not under the interpreter
                self.compiled = launched
                # the compiled launcher takes every parameter in order, constexprs included
                self.constexpr_values = tuple(self.constexprs[name] for name in self.kernel.arg_names[len(args) :])
            return
        self.compiled[self.grid](*args, *self.constexpr_values)
