"""The statuses a check or a requirement can read, how bad each is, and the roll-up that takes the worst
(specs/INTERPRETING.md).

Plain constants with no import of the harness: ``specconform.harness.core`` exports them beside the types that
carry them, and the schemas of run records (``specconform.harness.schemas``) validate against them.
"""

from __future__ import annotations

from collections.abc import Sequence

PASS = "PASS"
FAIL = "FAIL"
NOT_RUN = "NOT_RUN"  # a requirement no case of the check reached (cut short, or never generated)
NOT_CLAIMED = "NOT_CLAIMED"
PRECONDITION_FAILED = "PRECONDITION_FAILED"
# the check's cases lie outside the engine's declared contract (inputs its own callers never produce), or the
# requirement could be judged only on values the adapter derives: neither PASS nor FAIL (specs/INTERPRETING.md)
NOT_APPLICABLE = "NOT_APPLICABLE"
# a case of the requirement failed, but its minimal case needs none of the requirement's features: the failure
# is a finding of another requirement, which this one cannot be certified past (specs/INTERPRETING.md)
BLOCKED = "BLOCKED"
ERROR = "ERROR"
TIMEOUT = "TIMEOUT"
STATUSES = (PASS, FAIL, BLOCKED, NOT_RUN, NOT_CLAIMED, NOT_APPLICABLE, PRECONDITION_FAILED, ERROR, TIMEOUT)
BAD = (FAIL, ERROR, TIMEOUT)
# Reports list the worst first; a roll-up takes the worst of its parts.
SEVERITY = {
    FAIL: 0,
    ERROR: 1,
    TIMEOUT: 2,
    BLOCKED: 3,
    NOT_RUN: 4,
    PRECONDITION_FAILED: 5,
    NOT_APPLICABLE: 6,
    NOT_CLAIMED: 7,
    PASS: 8,
}


def worst(statuses: Sequence[str], default: str = NOT_RUN) -> str:
    return min(statuses, key=SEVERITY.__getitem__, default=default)
