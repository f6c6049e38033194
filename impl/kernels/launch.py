"""Launching a Triton kernel through its compiled handle, so that an eager call pays for the driver
launch and not for the JIT's per-argument specialisation, nor for the per-launch Python of Triton's
launcher (its launch-hook bookkeeping) when no launch hook is installed."""

from __future__ import annotations

from triton import knobs
from triton.compiler import CompiledKernel
from triton.runtime import driver


def _no_launch_hooks() -> bool:
    """True where no launch hook is installed (a profiler such as Proton installs them): a hook chain
    with no hooks in it, or none at all."""
    enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    return not (getattr(enter, "calls", enter) or getattr(exit_, "calls", exit_))


class CompiledLaunch:
    """The launches of one kernel for one launch key: the first call goes through Triton's JIT, which
    compiles (or finds) the kernel specialised on its arguments and launches it; later calls hand the
    arguments straight to that compiled kernel's launcher on the current stream (through the compiled
    kernel's own runner where a launch hook is installed, so that the hook sees the launch). The
    caller's key must therefore fix everything the JIT specialises on: the dtype and 16-byte alignment
    of every tensor, the value of every integer, the grid, the constexprs and the warps. Under
    ``TRITON_INTERPRET=1`` (no compiled kernel) every call goes through the interpreter."""

    def __init__(self, kernel, grid: tuple[int, ...], num_warps: int, **constexprs):
        self.kernel, self.num_warps, self.constexprs = kernel, num_warps, constexprs
        self.grid = tuple(grid) + (1,) * (3 - len(grid))  # the compiled launcher reads three dimensions
        self.compiled: CompiledKernel | None = None
        self.constexpr_values: tuple = ()
        self.launcher = self.function = self.packed_metadata = self.current_stream = self.current_device = None

    def __call__(self, *args) -> None:
        """Launch on the current stream with the kernel's runtime arguments ``args`` (in order)."""
        compiled = self.compiled
        if compiled is None:
            launched = self.kernel[self.grid](*args, **self.constexprs, num_warps=self.num_warps)
            if isinstance(launched, CompiledKernel):  # not under the interpreter
                self.compiled = launched
                # the compiled launcher takes every parameter in order, constexprs included
                self.constexpr_values = tuple(self.constexprs[name] for name in self.kernel.arg_names[len(args) :])
                # what the compiled kernel's runner looks up on every launch, looked up once
                self.launcher, self.function = launched.run, launched.function
                self.packed_metadata = launched.packed_metadata
                self.current_stream = driver.active.get_current_stream
                self.current_device = driver.active.get_current_device
            return
        if not _no_launch_hooks():
            compiled[self.grid](*args, *self.constexpr_values)
            return
        grid_x, grid_y, grid_z = self.grid
        # the launcher's arguments as the compiled kernel's runner passes them, with no launch metadata
        # and no hooks
        self.launcher(
            grid_x,
            grid_y,
            grid_z,
            self.current_stream(self.current_device()),
            self.function,
            self.packed_metadata,
            None,
            None,
            None,
            *args,
            *self.constexpr_values,
        )
