"""Kernel-level engine adapters.

An engine adapter is any object with ``name``, ``version``, ``device``, ``profile``
(``harness.profiles.Profile``) and the methods its profile's capabilities promise:

- ``budget``: ``budget_state(start, end, max_num_reqs, scope, max_spec_len=0)`` returning a handle
  with ``sync_batch(update)``, ``forced_tokens(num_draft_tokens, draft_token_ids) -> list[int]`` and
  ``update_state(rows)``. ``update`` has ``batch_size``, ``removed``, ``added`` (objects with
  ``index``, ``budget``, ``prompt_token_ids``) and ``moved`` (``(src, dst, "SWAP" | "UNIDIRECTIONAL")``).
  ``num_draft_tokens`` may be None (one row per slot). Invalid input raises ``ValueError``.
- ``budget-logits``: the handle also has ``apply_to_logits(logits [R, V] ndarray, num, drafts)``.
- ``rejection``: ``rejection_sample(case: RejectionCase) -> (token_ids [B, W], num_emitted [B])``.
- ``counting``: ``count_emitted(token_ids [B, W], vocab_size) -> (num_emitted, broken_prefix,
  out_of_vocab)``, each ``[B]``.
- ``metrics``: ``acceptance_metrics(steps: [(K, row)], eos_token_ids) -> dict`` with
  ``acceptance_rate``, ``mean_acceptance_length`` and ``accepted_per_position``.

Engine teams plug theirs in as ``module:factory`` (``specconform run --engine my_pkg.adapter:make``).
"""

from __future__ import annotations

import importlib
import platform

import numpy as np

from . import profiles
from .oracle import budget as tb
from .oracle import counting as ac
from .oracle import rejection as rs


class OracleEngine:
    """The executable oracle itself: every check must pass against it."""

    name = "oracle"
    version = "spec-0.1"
    device = f"cpu ({platform.machine()})"

    def __init__(self):
        self.profile = profiles.canonical()

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return OracleBudget(tb.BudgetBatch(start, end, max_num_reqs, scope))

    def rejection_sample(self, case: rs.RejectionCase):
        tokens, num, _ = rs.sample_case(case)
        return tokens, num

    def count_emitted(self, token_ids, vocab_size):
        rows = np.asarray(token_ids).tolist()
        problems = ac.validate_rows(rows, vocab_size)
        holes = {p.row for p in problems if p.kind == "hole"}
        bad = {p.row for p in problems if p.kind == "out_of_vocab"}
        return (
            [ac.num_emitted(r) for r in rows],
            [i in holes for i in range(len(rows))],
            [i in bad for i in range(len(rows))],
        )

    def acceptance_metrics(self, steps, eos_token_ids):
        metrics = ac.AcceptanceMetrics(max_positions=max((k for k, _ in steps), default=1))
        for k, row in steps:
            metrics.observe(k, row, eos_token_ids)
        return {
            "acceptance_rate": metrics.acceptance_rate,
            "mean_acceptance_length": metrics.mean_acceptance_length,
            "accepted_per_position": metrics.accepted_per_position,
        }


class OracleBudget:
    def __init__(self, batch: tb.BudgetBatch):
        self.batch = batch

    def sync_batch(self, update):
        self.batch.apply(update)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return self.batch.forced_rows(num_draft_tokens, draft_token_ids)

    def update_state(self, rows):
        self.batch.commit([list(r) for r in rows])

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        for row, token in enumerate(self.forced_tokens(num_draft_tokens, draft_token_ids)):
            if token != -1:
                logits[row] = -np.inf
                logits[row, token] = 0.0
        return logits


class ReferenceEngine:
    """``impl`` on a torch device (``cpu`` or ``cuda``) with a backend (``auto``, ``torch``, ``triton``)."""

    name = "reference"

    def __init__(self, device: str = "cpu", backend: str = "auto"):
        import torch

        import impl

        self.torch = torch
        self.impl = impl
        self.device = torch.device(device)
        self.backend = backend
        self.version = f"impl-{impl.__version__} torch-{torch.__version__} backend-{backend}"
        self.profile = profiles.canonical()

    def _tensor(self, x, dtype):
        return None if x is None else self.torch.tensor(np.asarray(x), dtype=dtype, device=self.device)

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return ReferenceBudget(self, start, end, max_num_reqs, scope, max_spec_len)

    def rejection_sample(self, case: rs.RejectionCase):
        torch = self.torch
        out = self.impl.rejection_sample(
            self._tensor(case.target_logits, torch.float32),
            self._tensor(case.draft_token_ids, torch.int64),
            self._tensor(case.num_draft_tokens, torch.int64),
            draft_probs=self._tensor(case.draft_probs, torch.float32),
            temperature=self._tensor(case.temperature, torch.float32),
            seeds=self._tensor(case.seeds, torch.int64),
            positions=self._tensor(case.positions, torch.int64),
            forced_token_ids=self._tensor(case.forced_token_ids, torch.int64),
            backend=self.backend,
        )
        return out.token_ids.cpu().numpy(), out.num_emitted.cpu().numpy()

    def count_emitted(self, token_ids, vocab_size):
        result = self.impl.count_emitted_validated(self._tensor(token_ids, self.torch.int64), vocab_size)
        return result.num_emitted.cpu().numpy(), result.broken_prefix.cpu().numpy(), result.out_of_vocab.cpu().numpy()

    def acceptance_metrics(self, steps, eos_token_ids):
        torch = self.torch
        width = max((len(r) for _, r in steps), default=1)
        stats = self.impl.AcceptanceStats(
            max_positions=max((k for k, _ in steps), default=1), eos_token_ids=eos_token_ids
        )
        for k, row in steps:
            stats.observe(torch.tensor([k]), torch.tensor([list(row) + [-1] * (width - len(row))]))
        return {
            "acceptance_rate": stats.acceptance_rate,
            "mean_acceptance_length": stats.mean_acceptance_length,
            "accepted_per_position": stats.accepted_per_position.tolist(),
        }


class ReferenceBudget:
    def __init__(self, engine: ReferenceEngine, start, end, max_num_reqs, scope, max_spec_len):
        self.engine = engine
        self.state = engine.impl.ThinkingBudgetState(
            start,
            end,
            max_num_reqs,
            max_spec_len=max_spec_len,
            scope=scope,
            device=engine.device,
            backend=engine.backend,
        )

    def sync_batch(self, update):
        impl = self.engine.impl
        if update is None:
            return
        self.state.sync_batch(
            impl.BatchUpdate(
                batch_size=update.batch_size,
                removed=tuple(update.removed),
                added=tuple(impl.AddedRequest(a.index, a.budget, list(a.prompt_token_ids)) for a in update.added),
                moved=tuple((s, d, impl.Move[getattr(k, "name", k)]) for s, d, k in update.moved),
            )
        )

    def _drafts(self, num_draft_tokens, draft_token_ids):
        if num_draft_tokens is None:
            return None, None
        torch = self.engine.torch
        return (
            self.engine._tensor(list(num_draft_tokens), torch.int64),
            self.engine._tensor(list(draft_token_ids), torch.int64),
        )

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return self.state.forced_tokens(*self._drafts(num_draft_tokens, draft_token_ids)).cpu().tolist()

    def update_state(self, rows):
        width = max((len(r) for r in rows), default=1)
        padded = np.full((len(rows), width), -1, dtype=np.int64)
        for i, r in enumerate(rows):
            padded[i, : len(r)] = r
        self.state.update_state(self.engine._tensor(padded, self.engine.torch.int64))

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        tensor = self.engine._tensor(logits, self.engine.torch.float32)
        self.state.apply_to_logits(tensor, *self._drafts(num_draft_tokens, draft_token_ids))
        return tensor.cpu().numpy()


_EMBEDDED: dict = {}


def embedded_server():
    """The embedded reference engine, started once per process on a free loopback port."""
    if "server" not in _EMBEDDED:
        from embedded import start

        _EMBEDDED["server"] = start()
    return _EMBEDDED["server"]


def make_engine(spec: str, api_options: dict | None = None):
    """``oracle``, ``reference[:device[:backend]]``, ``zoo:<mutant>``, ``embedded[:single|multi]`` (the
    embedded engine over HTTP), ``openai`` (any server: ``api_options`` gives base_url, model, ...)
    or ``module:factory``."""
    if spec == "embedded" or spec.startswith("embedded:"):
        from .api import ApiEngine, embedded_profile

        variant = spec.partition(":")[2] or "single"
        return ApiEngine(embedded_server().base_url, embedded_profile(variant), name=f"embedded:{variant}")
    if spec == "openai":
        from .api import API_PROFILES, ApiEngine, ApiProfile

        options = dict(api_options or {})
        if not options.get("base_url") or not options.get("model"):
            raise ValueError("--engine openai needs --base-url and --model")
        base_url = options.pop("base_url")
        profile_name = options.pop("api_profile", None) or "vllm"
        name = options.pop("engine_name", None)
        return ApiEngine(base_url, ApiProfile(name=profile_name, **API_PROFILES[profile_name], **options), name=name)
    if spec == "oracle":
        return OracleEngine()
    if spec == "reference" or spec.startswith("reference:"):
        parts = spec.split(":")[1:]
        return ReferenceEngine(*parts)
    if spec.startswith("zoo:"):
        from . import zoo

        return zoo.make_mutant(spec.split(":", 1)[1])
    if ":" in spec:
        module, _, factory = spec.partition(":")
        return getattr(importlib.import_module(module), factory)()
    raise ValueError(
        f"engine must be oracle, reference[:device[:backend]], zoo:<mutant> or module:factory; got {spec!r}"
    )
