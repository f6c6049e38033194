"""Engines that misbehave the way real ones do, for the runner's isolation tests (``module:factory``)."""

import ctypes
import os
import signal
import sys
import time

from specconform.harness.adapters.oracle import OracleBudget, OracleEngine


class _Budget(OracleBudget):
    def __init__(self, batch, action):
        super().__init__(batch)
        self.action = action

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        self.action()
        return super().forced_tokens(num_draft_tokens, draft_token_ids)


class _Engine(OracleEngine):
    def __init__(self, action):
        super().__init__()
        self.action = action

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        state = super().budget_state(start, end, max_num_reqs, scope, max_spec_len)
        return _Budget(state.batch, self.action)


def _hang_in_c_with_sigalrm_blocked():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    ctypes.CDLL(None).sleep(3600)  # C code: no Python signal handler runs here


def _segfault():
    ctypes.string_at(0)


def exits_zero():
    return _Engine(lambda: sys.exit(0))


def hard_exit():
    return _Engine(lambda: os._exit(0))


def segfaults():
    return _Engine(_segfault)


def hangs_in_c():
    return _Engine(_hang_in_c_with_sigalrm_blocked)


def factory_hangs():
    time.sleep(3600)  # never returns: the runner's deadline must end it


class _WrongFromTheStart(OracleBudget):
    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        rows = super().forced_tokens(num_draft_tokens, draft_token_ids)
        return [0 if token == -1 else -1 for token in rows]  # every row wrong, from the first step on


class _FailsAtFirstStep(OracleEngine):
    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return _WrongFromTheStart(super().budget_state(start, end, max_num_reqs, scope, max_spec_len).batch)


def fails_at_first_step():
    return _FailsAtFirstStep()
