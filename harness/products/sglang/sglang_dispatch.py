"""SGLang's EAGLE verification dispatch by platform, for ``specconform.harness.adapters.sglang``.

SGLang picks a verify path per platform in two places, and the adapter lets both decide rather than choosing a kernel
itself:

- ``srt/speculative/eagle_utils.py`` ``_verify_uses_greedy`` (0.5.23 lines 485-500): whether ``eagle_sample``
  commits the argmax through the greedy verifier or takes the sampling branch (lines 641-854: the Triton chain sampler
  with ``speculative_use_rejection_sampling``, block verification on top of it, else the JIT CUDA target-only
  kernel). It is called with the platform's flags (``is_cpu``, ``is_hip``, ``is_xpu``), not this process's.
- ``kernels/ops/speculative/spec_tree.py`` ``verify_tree_greedy_func`` (line 480): the greedy kernel, chosen from the
  module's ``_is_cuda`` / ``_is_hip`` / ``_is_musa`` / ``_is_cpu`` / ``_is_npu`` / ``_is_xpu``. While it runs those
  flags are set to the platform's, so SGLang's own branch reaches the platform's kernel: the JIT CUDA
  ``verify_tree_greedy`` on ``cuda``, the Triton ``verify_tree_greedy_triton`` on ``xpu``.

A platform is a declared variant of the product (``platform: cuda | xpu | cpu``): ``sglang`` is judged as CUDA,
``sglang-xpu`` as XPU. A platform whose kernels cannot run here is refused, never substituted: ``cpu`` always (its
greedy kernel is an ``sgl_kernel`` CPU op that no installable package ships), and ``cuda``'s JIT greedy kernel where no
GPU is present (``OutsideContract`` for the batches that reach it; its Triton chain sampler runs under Triton's
interpreter). Each path is named as a result line reads it: ``verify path: xpu greedy (verify_tree_greedy_triton)``.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass

from ..contract import OutsideContract
from ..core import UsageError

# the platform flags spec_tree.py (and eagle_utils before 0.5.23) reads at call time
FLAGS = ("_is_cuda", "_is_hip", "_is_musa", "_is_npu", "_is_xpu", "_is_cpu")
# the server options the judged dispatch runs under: --speculative-use-rejection-sampling, no block verification
USE_REJECTION_SAMPLING = True
USE_BLOCK_VERIFICATION = False


@dataclass(frozen=True)
class Platform:
    name: str
    flag: str  # the one of FLAGS set on this platform
    greedy_kernel: str  # what verify_tree_greedy_func reaches there
    needs_gpu: bool = False  # its greedy kernel is compiled for a CUDA device (JIT)
    unrunnable: str = ""  # why none of its verification can run in this project's environments

    def predicate_flags(self) -> dict[str, bool]:
        """``_verify_uses_greedy``'s platform arguments on this platform."""
        return {"is_cpu": self.flag == "_is_cpu", "is_hip": self.flag == "_is_hip", "is_xpu": self.flag == "_is_xpu"}


PLATFORMS = {
    "cuda": Platform("cuda", "_is_cuda", "verify_tree_greedy, JIT CUDA kernels/jit/csrc/speculative/tree.cuh", True),
    "xpu": Platform("xpu", "_is_xpu", "verify_tree_greedy_triton, Triton verify_tree_greedy_kernel_triton"),
    "cpu": Platform(
        "cpu",
        "_is_cpu",
        "verify_tree_greedy_cpu, sgl_kernel CPU op",
        unrunnable="its greedy verifier is sgl_kernel's CPU op verify_tree_greedy_cpu (spec_tree.py line 509), "
        "and no installable package ships sgl_kernel's CPU ops (they exist only as repository source)",
    ),
}


def platform(name: str) -> Platform:
    """The platform ``name``; a ``UsageError`` names the known ones, or why this one cannot run here."""
    if name not in PLATFORMS:
        raise UsageError(f"platform is {name!r}: SGLang's adapter knows {', '.join(PLATFORMS)}")
    chosen = PLATFORMS[name]
    if chosen.unrunnable:
        raise UsageError(f"platform is {name!r}: it cannot be judged here, {chosen.unrunnable}; nothing is substituted")
    return chosen


def sampled_path() -> str:
    """The kernel ``eagle_sample``'s sampling branch reaches under ``USE_*`` (lines 711-717)."""
    if not USE_REJECTION_SAMPLING:
        return "tree_speculative_sampling_target_only, JIT CUDA"
    block = ", block_verification=True" if USE_BLOCK_VERIFICATION else ""
    return f"chain_speculative_sampling_triton{block}, Triton"


def path_name(chosen: Platform, greedy: bool) -> str:
    """A result line's name for the path a batch reached on ``chosen``."""
    if greedy:
        return f"verify path: {chosen.name} greedy ({chosen.greedy_kernel})"
    return f"verify path: {chosen.name} sampled ({sampled_path()})"


def uses_greedy(eagle_utils, chosen: Platform, is_all_greedy: bool) -> bool:
    """SGLang's ``_verify_uses_greedy`` for a batch on ``chosen`` under the judged server options."""
    return bool(
        eagle_utils._verify_uses_greedy(
            is_all_greedy=is_all_greedy, use_rejection_sampling=USE_REJECTION_SAMPLING, **chosen.predicate_flags()
        )
    )


def describe(eagle_utils, chosen: Platform) -> str:
    """What every request reaches on ``chosen``, as SGLang's predicate decides it (for the engine's version line)."""
    if uses_greedy(eagle_utils, chosen, is_all_greedy=False):
        return f"platform {chosen.name}, every batch: {path_name(chosen, True)}"
    return (
        f"platform {chosen.name}, all-greedy batches: {path_name(chosen, True)}; "
        f"other batches: {path_name(chosen, False)}"
    )


@contextlib.contextmanager
def _as_platform(module, chosen: Platform):
    """``module``'s platform flags set to ``chosen``'s for the duration (restored after)."""
    held = {name: getattr(module, name) for name in FLAGS if hasattr(module, name)}
    try:
        for name in held:
            setattr(module, name, name == chosen.flag)
        yield
    finally:
        for name, value in held.items():
            setattr(module, name, value)


def verify_greedy(verify_tree_greedy_func, chosen: Platform, on_gpu: bool, **tensors) -> None:
    """``verify_tree_greedy_func(**tensors)`` with its module's platform flags set to ``chosen``'s, so its own branch
    picks the kernel; ``OutsideContract`` where that kernel needs a GPU and ``on_gpu`` is false."""
    if chosen.needs_gpu and not on_gpu:
        raise OutsideContract(
            f"{path_name(chosen, True)}: this batch is all greedy, and on {chosen.name} SGLang's greedy verifier is a "
            "JIT CUDA kernel that needs a GPU (scripts/judge-sglang-gpu.sh judges it); no other kernel is substituted"
        )
    with _as_platform(sys.modules[verify_tree_greedy_func.__module__], chosen):
        verify_tree_greedy_func(**tensors)
