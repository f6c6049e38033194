"""What is mutated: the target files, the engine that judges each, the requirement area of each function
and what is left alone (and why); and the checks every mutant is judged by."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BUDGET, REJECTION, COUNTING = "TB-", "RS-", "AC-"
ANY = ""  # shared code: no area of its own


@dataclass(frozen=True)
class Target:
    """A file to mutate, the engine that judges it and, per function (name globs, first match), the
    requirement area its code implements (an id prefix: its checks run first, and a kill on another area's
    requirement is counted). ``skip``: functions (and module-level names) left alone, for the reason ``why``."""

    path: str
    engine: str
    areas: dict[str, str]
    skip: tuple[str, ...] = ()
    why: str = ""

    def area(self, function: str) -> str:
        return next((a for pattern, a in self.areas.items() if fnmatch.fnmatchcase(function, pattern)), ANY)


TRITON_ONLY = "reached only with backend='triton' (GPU, or the Triton interpreter); the CPU path never runs them"
TARGETS = (
    Target(
        "impl/thinking_budget.py",
        "reference",
        {"<module>": ANY, "*": BUDGET},
        ("ThinkingBudgetState._step_triton",),
        TRITON_ONLY,
    ),
    Target("impl/markers.py", "reference", {"<module>": ANY, "*": BUDGET}),
    Target(
        "impl/rejection.py",
        "reference",
        {"<module>": ANY, "*": REJECTION},
        (
            "PROGRAMS_PER_SM",
            "LEVEL_PROGRAMS_PER_SM",
            "WIDE_WARPS",
            "NARROW_WARPS",
            "ROW_PASS_NARROWING",
            "RACE_NARROWING",
            "ROW_SPLIT_MIN_IDS",
            "FILL_PROGRAMS_PER_SM",
            "_target_programs",
            "_split_programs",
            "_multi_processors",
            "_launch_shape",
            "_cdiv",
            "_TritonPlan",
            "_PLANS",
            "MAX_PLANS",
            "_plan",
            "_rejection_triton",
            "triton_next_pow2",
            "_block_size",
        ),
        TRITON_ONLY,
    ),
    Target(
        "impl/counting.py",
        "reference",
        {"<module>": ANY, "*": COUNTING},
    ),
    Target(
        "impl/validation.py",
        "reference",
        {"*": ANY},
        ("describe", "_same_device"),
        "describe only formats error text (no requirement constrains its wording); _same_device compares "
        "CUDA device indices and is reached only with CUDA tensors",
    ),
    Target(
        "harness/adapters/oracle.py",
        "oracle",
        {
            "OracleEngine.budget_state": BUDGET,
            "OracleBudget*": BUDGET,
            "OracleEngine.rejection_sample": REJECTION,
            "OracleEngine.count_emitted": COUNTING,
            "OracleEngine.acceptance_metrics": COUNTING,
            "*": ANY,
        },
    ),
)

# The checks every mutant is judged by: every kernel-level check except the statistical ones (seeded
# draws are judged exactly by rejection/reference-draws; the distribution checks take most of a run).
FAST_EXCLUDE = ("api.*", "rejection/distribution*")
