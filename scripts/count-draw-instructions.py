"""The instructions each draw candidate's inner loop issues per element, compiled for a GPU without one: each kernel
of scripts/draw_candidates.py is compiled ahead of time for sm_90 (Triton's own ``ptxas``) and its SASS disassembled
(Triton's bundled ``nvdisasm``); the loop is the longest body closed by a backward branch. It prints, per candidate
and logits dtype, the loop's instructions and special-function (``MUFU``) instructions per element, and which other
instructions the loop holds most. These explain scripts/profile-draws.py's times; they are not times.

From the repository root (no GPU needed): ``PYTHONPATH=$PWD python3 scripts/count-draw-instructions.py``.
"""

import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
import triton.backends.nvidia
from draw_candidates import CANDIDATES
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 90, 32)  # sm_90: the H100 and H200
BLOCK, WARPS = 1024, 4  # the first launch shape of scripts/profile-draws.py
ELEMENTS_PER_THREAD = BLOCK // (32 * WARPS)  # of one loop step
NVDISASM = Path(triton.backends.nvidia.__file__).parent / "bin" / "nvdisasm"
LABEL = re.compile(r"^\s*\.L_x_(\d+):")
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)")


def sass(name: str, pointer: str) -> str:
    """The disassembly of candidate ``name``'s kernel for logits of Triton type ``pointer`` (``*fp32``, ``*bf16``)."""
    signature = {
        "logits_ptr": pointer, "seeds_ptr": "*i64", "positions_ptr": "*i64", "shift_ptr": "*fp32",
        "best_ptr": "*fp32", "arg_ptr": "*i32", "vocab": "i32", "split": "i32", "scale": "fp32", "BLOCK": "constexpr",
    }  # fmt: skip
    source = ASTSource(CANDIDATES[name].kernel, signature, constexprs={"BLOCK": BLOCK})
    kernel = triton.compile(source, target=TARGET, options={"num_warps": WARPS})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        return subprocess.run([NVDISASM, "-c", cubin.name], capture_output=True, text=True, check=True).stdout


def loop_opcodes(disassembly: str) -> list[str]:
    """The opcodes of the longest stretch from a label to a branch back to it: the kernel's loop over the split."""
    bodies: dict[str, list[str]] = {}
    label = None
    longest: list[str] = []
    for line in disassembly.splitlines():
        found = LABEL.match(line)
        if found:
            label = found.group(1)
            bodies[label] = []
            continue
        opcode = INSTRUCTION.search(line)
        if opcode is None or label is None:
            continue
        for body in bodies.values():
            body.append(opcode.group(1))
        back = re.search(r"BRA.*\.L_x_(\d+)\b", line)
        if back and back.group(1) in bodies and len(bodies[back.group(1)]) > len(longest):
            longest = list(bodies[back.group(1)])
    return longest


def main() -> int:
    print(f"sm_{TARGET.arch}, Triton {triton.__version__}, BLOCK {BLOCK}, {WARPS} warps: per element of the loop")
    for name in CANDIDATES:
        for pointer in ("*fp32", "*bf16"):
            opcodes = loop_opcodes(sass(name, pointer))
            counts = collections.Counter(opcodes)
            most = ", ".join(f"{op} {n / ELEMENTS_PER_THREAD:.1f}" for op, n in counts.most_common(5))
            print(
                f"{name:15s} {pointer[1:]:5s} {len(opcodes) / ELEMENTS_PER_THREAD:5.1f} instructions, "
                f"{counts['MUFU'] / ELEMENTS_PER_THREAD:.1f} MUFU  ({most})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
