"""Kernel-level adapter for SGLang (``specconform.harness.adapters.sglang:make``), judged as ``sglang-<release>``.

It serves the releases ``harness/products/sglang/releases.yaml`` teaches it (``specconform.harness.products.releases``):
where each release keeps the pieces below (0.5.23 moved the greedy verifiers from ``srt/speculative/eagle_utils.py``
to ``kernels/ops/speculative/spec_tree.py`` and resolves its top-k renormalisation in
``kernels/ops/sampling/renorm.py``) and the parameters the adapter passes them are that file's data, checked
against the release's code when the engine is built; any other release is refused, naming those taught.
Line numbers below are 0.5.23's.

SGLang's server cannot run here (its ``sglang-kernel`` wheel is built for another torch and has no CPU ops), so its
pieces are driven as its own callers drive them:

- **Budget A**, ``srt/sampling/custom_logit_processor.py`` ``ThinkingBudgetLogitProcessor`` (the request field
  ``custom_params.thinking_budget``): one subclass per budget state carries the case's marker ids, as a user's
  processor for a model carries its own. Each step the processor is called, as ``srt/layers/sampler.py`` calls it,
  on one logits row per slot with ``custom_param_list[i] = {"thinking_budget": budget, "__req__": req}`` and a
  ``req`` whose ``origin_input_ids`` and ``output_ids`` are the request's prompt and committed tokens; a row it sets
  to ``-inf`` but for one ``0`` is forced to that id. Its ids are single tokens: a case with a longer marker lies
  outside what it can be handed (``OutsideContract``: the check reads NOT_APPLICABLE, naming the marker). It forces
  ``NEW_LINE_TOKEN_ID`` and then the end marker; the subclass sets its newline id to the end marker's, a
  configuration a user may send, under which it forces the end marker alone (the canonical ``forced_end: marker``;
  the transition newline is not judged). SGLang applies the processor outside verification only: EAGLE and n-gram
  verification (``srt/speculative/eagle_utils.py``) never call it (SGLang issues 21724 and 26330). So the profile
  claims no budget class under speculative decoding (``tb.spec-decode`` and every family with drafts), and a step
  with drafts lies outside what the processor is ever handed (``OutsideContract``, NOT_APPLICABLE, saying so).
- **Verification**, dispatched as ``eagle_utils.eagle_sample`` dispatches it on the engine's platform with
  ``speculative_use_rejection_sampling`` (``specconform.harness.adapters.sglang_dispatch``: SGLang's own predicate and
  greedy branch pick the path; the seeded coins are ``eagle_utils``'s: ``specconform.harness.adapters.sglang_eagle``).
  ``make`` judges the CUDA platform (``sglang-<release>``), ``make_xpu`` the XPU one (``sglang-<release>-xpu``), and
  ``make_cpu`` is refused (its greedy kernel is an ``sgl_kernel`` CPU op no package ships). The engine's version line,
  which every result line carries, names the path each batch reaches. Each request's sampling parameters are SGLang's
  ``SamplingParams`` for the case's temperature and seed (temperature 0 becomes temperature 1 with top-k 1). SGLang
  verifies one draft length per batch, so a case's requests are verified in groups of equal ``K``, each laid out as a
  chain: candidates ``[b, K + 1]`` with slot 0 the last verified token and the drafts after it, ``retrieve_index`` the
  rows in order, ``retrieve_next_token`` the next slot, no siblings.

  - A group ``_verify_uses_greedy`` sends greedy (on CUDA an all-greedy one, ``SamplingBatchInfo.is_all_greedy``;
    on XPU every one) is verified by ``verify_tree_greedy_func`` (``kernels/ops/speculative/spec_tree.py``; in
    ``eagle_utils`` before 0.5.23) over ``target_predict``, the argmax of each row (``torch.argmax``, as
    ``eagle_sample`` computes it). Its branch reaches the JIT CUDA ``verify_tree_greedy`` on CUDA (refused without a
    GPU: ``OutsideContract``) and the Triton ``verify_tree_greedy_triton`` on XPU.
  - Any other group goes to ``kernels/ops/speculative/reject_sampling.py`` ``chain_speculative_sampling_triton``:
    target probabilities from SGLang's ``kernels/ops/sampling`` ``softmax`` with one temperature per row, then, where
    a request has a top-k (a greedy request of a mixed batch), SGLang's ``top_k_renorm_prob``
    (``kernels/ops/sampling/renorm.py``: FlashInfer's on CUDA; no kernel on a CPU, where such a group lies outside
    what can be run: ``OutsideContract``, NOT_APPLICABLE, saying so). Draft probabilities ``[b, K, V]`` as given (or
    one-hot at the drafts). Coins from ``torch.rand`` as ``eagle_utils._verify_coins`` draws them for unseeded
    requests, and from ``eagle_utils._seeded_verify_coins`` with ``seq_lens`` the case's position for seeded ones
    (SGLang seeds every request under ``--enable-deterministic-inference``).
  - A request emits ``predict[accept_index[: accept_token_num + 1]]``, SGLang's own reading
    (``eagle_worker_common.py``: ``predict[accept_index]``).
  - A request without drafts never reaches SGLang's verifier (every request of a verify batch has
    ``draft_token_num - 1 >= 1`` drafts; Triton 3.6 fails to compile the chain kernel for one slot), so where a case
    puts one beside verified requests its token is the argmax for a greedy request and otherwise drawn by
    ``torch.multinomial`` from SGLang's softmax: the adapter's stand-in for SGLang's sampler, which no claimed
    requirement judges (``rs.zero-draft`` is not claimed).

The package root and ``sglang.kernels(.ops(.speculative))`` are stood in for (``sys.modules`` entries whose
``__path__`` is the installed folder), so ``sglang/__init__.py`` and the kernel registry's eager imports never run.
On a CPU it needs ``TRITON_INTERPRET=1`` set before Python starts. Nothing of SGLang's code is copied here.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import types

import numpy as np

from specconform.specs.interface import RejectionCase

from ..contract import OutsideContract
from ..core import UsageError
from ..products import registry, releases
from . import sglang_dispatch
from .sglang_budget import SglangBudget
from .sglang_eagle import EagleVerifyHelpers, import_eagle_utils

# what its modules import beyond torch, Triton and transformers, installed without their dependencies (SGLang pins
# torch 2.14 and its CUDA kernels); the pinned versions are SGLang's pins
PACKAGES = (
    *("dill", "orjson", "msgspec", "psutil", "pybase64", "requests", "urllib3", "pillow", "pyzmq", "ipython"),
    *("pygments", "traitlets", "apache-tvm-ffi==0.1.11", "sentencepiece==0.2.1", "compressed-tensors==0.18.0"),
    *("loguru", "gguf"),
)
_NAMESPACES = ("sglang", "sglang.kernels", "sglang.kernels.ops", "sglang.kernels.ops.speculative")
PRODUCT = "sglang"  # whose releases.yaml says what differs between the releases this adapter drives
# the roles loaded only when a case needs them: a platform kernel a release may lack here (its absence makes the case
# lie outside what can be run, not the release untaught)
PLATFORM_ROLES = ("top_k_renorm_prob",)
# the roles whose signatures the adapter relies on, checked when the engine is built
CHECKED = (
    "ThinkingBudgetLogitProcessor.__call__",
    "chain_speculative_sampling_triton",
    "verify_tree_greedy_triton",
    "verify_tree_greedy_func",
    "_verify_uses_greedy",
    "_seeded_verify_coins",
    "softmax",
)


def import_sglang() -> str:
    """Stand in for SGLang's package root (``sglang/__init__.py`` never runs); the installed release's version."""
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("SGLang's Triton chain sampler runs on a CPU only with TRITON_INTERPRET=1 set before start")
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        newest = releases.taught(PRODUCT)[-1]
        raise RuntimeError(f"sglang is not installed (pip install --no-deps sglang=={newest} {' '.join(PACKAGES)})")
    root = list(spec.submodule_search_locations)[0]
    if not getattr(sys.modules.get("sglang"), "_specconform_stand_in", False):
        for name in _NAMESPACES:
            module = types.ModuleType(name)
            module.__path__ = [os.path.join(root, *name.split(".")[1:])]
            module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
            module.__spec__.submodule_search_locations = module.__path__
            module._specconform_stand_in = True
            sys.modules[name] = module
    return importlib.metadata.version("sglang")


def load_release(version: str) -> tuple[releases.Release, types.SimpleNamespace]:
    """SGLang ``version`` as ``harness/products/sglang/releases.yaml`` teaches it, and what the adapter drives there by
    role (its imports, but ``PLATFORM_ROLES``); a ``UsageError`` names the releases taught when it is not one of them,
    or the role that is not where its range declares it, or the parameter that moved."""
    try:
        release = releases.release(PRODUCT, version)
        import_eagle_utils()  # with its stand-ins, before any role reads eagle_utils
        loaded = types.SimpleNamespace(
            **{role: release.load(role) for role in release.imports if role not in PLATFORM_ROLES}
        )
        for role in CHECKED:
            owner, _, method = role.partition(".")
            function = getattr(loaded, owner) if owner in release.imports else getattr(loaded.eagle_utils, owner)
            release.check_signature(role, getattr(function, method) if method else function)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    return release, loaded


# each factory: the platform it judges and the product whose profile it is judged under
FACTORIES = {"make": ("cuda", PRODUCT), "make_xpu": ("xpu", "sglang-xpu"), "make_cpu": ("cpu", PRODUCT)}


def make():
    return SglangEngine("make")


def make_xpu():
    return SglangEngine("make_xpu")


def make_cpu():
    """Refused: SGLang's CPU platform verifies through ``sgl_kernel``'s CPU op, which no package ships."""
    return SglangEngine("make_cpu")


class SglangEngine:
    def __init__(self, factory: str = "make"):
        import torch

        name, product = FACTORIES[factory]
        self.platform = sglang_dispatch.platform(name)  # refuses a platform that cannot run here, before any import
        self.torch = torch
        installed = import_sglang()
        self.release, self.sglang = load_release(installed)
        try:
            self.name = self.release.name_of(factory)
        except releases.UntaughtRelease as exc:
            raise UsageError(f"platform {name}: {exc}") from None
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.eagle = EagleVerifyHelpers(torch, self.device)
        where = torch.cuda.get_device_name() if self.device.type == "cuda" else "cpu (Triton interpreter)"
        dispatch = sglang_dispatch.describe(self.eagle.eagle_utils, self.platform)
        self.version = f"sglang-{installed} torch-{torch.__version__} {where}; {dispatch}"
        # with its reasons: harness/products/<product>/profile.yaml, named for this release
        profile_path = registry.product(product).profile_path
        if profile_path is None:
            raise UsageError(f"product {product!r} names no profile file, and {factory} is judged under its profile")
        self.profile = self.release.profile(factory, profile_path)

    # -- verification ---------------------------------------------------------------------------

    def rejection_sample(self, case: RejectionCase):
        if case.forced_token_ids is not None and (case.forced_token_ids != -1).any():
            row = int(np.flatnonzero(case.forced_token_ids != -1)[0])
            raise ValueError(
                f"forced_token_ids[{row}] is {int(case.forced_token_ids[row])}: SGLang's verification applies no "
                "logit processor, so its verifiers have no forced rows"
            )
        if case.marks_unseeded:  # the profile declares no mixed-seeding: its checks never hand it such a batch
            raise ValueError(
                f"seeded is {case.seeded.tolist()}: SGLang's verification seeds every request "
                "(--enable-deterministic-inference, 42 where a request names none) or none"
            )
        params = [
            self.sglang.SamplingParams(temperature=float(t), sampling_seed=case.seed_of(i))
            for i, t in enumerate(case.temperature)
        ]
        rows, drafts = case.row_offsets(), case.draft_offsets()
        width = int(case.num_draft_tokens.max(initial=0)) + 1
        tokens = np.full((case.batch_size, width), -1, dtype=np.int64)
        emitted = np.zeros(case.batch_size, dtype=np.int64)
        for K in sorted({int(k) for k in case.num_draft_tokens}):
            requests = np.flatnonzero(case.num_draft_tokens == K)
            group = [params[i] for i in requests]
            logits = self.torch.tensor(
                np.concatenate([case.target_logits[rows[i] : rows[i + 1]] for i in requests]),
                dtype=self.torch.float32,
                device=self.device,
            )
            if K == 0:  # no drafts: SGLang samples the token outside verification (see the module docstring)
                tokens[requests, 0] = self._sample_without_drafts(logits, group)
                emitted[requests] = 1
                continue
            draft_ids = np.stack([case.draft_token_ids[drafts[i] : drafts[i + 1]] for i in requests])
            layout = self._chain_layout(draft_ids)
            all_greedy = all(p.top_k <= 1 for p in group)  # SamplingBatchInfo.is_all_greedy
            if sglang_dispatch.uses_greedy(self.eagle.eagle_utils, self.platform, all_greedy):
                self._verify_greedy(logits, layout)
            else:
                self._verify_sampled(case, requests, group, logits, layout)
            predict, accept_index, accepted = (
                layout[name].cpu().numpy() for name in ("predicts", "accept_index", "accept_token_num")
            )
            for row, i in enumerate(requests):
                n = int(accepted[row]) + 1
                tokens[i, :n] = predict[accept_index[row, :n]]
                emitted[i] = n
        return tokens, emitted

    def _chain_layout(self, draft_ids: np.ndarray) -> dict:
        """A chain's verify inputs and outputs for ``draft_ids [b, K]``, as ``build_tree_kernel_efficient`` lays out
        a tree with top-k 1: ``candidates [b, K + 1]`` (slot 0 the last verified token, which no verifier reads),
        ``retrieve_index [b, K + 1]`` the flat row of each slot, ``retrieve_next_token`` the next slot (-1 after the
        last), ``retrieve_next_sibling`` all -1; ``predicts [b * (K + 1)]``, ``accept_index [b, K + 1]`` (-1) and
        ``accept_token_num [b]`` as ``eagle_sample`` allocates them (int32)."""
        torch, device = self.torch, self.device
        b, K = draft_ids.shape
        candidates = torch.zeros((b, K + 1), dtype=torch.int64, device=device)
        candidates[:, 1:] = torch.tensor(draft_ids, dtype=torch.int64, device=device)
        next_token = torch.arange(1, K + 2, dtype=torch.int64, device=device).repeat(b, 1)
        next_token[:, K] = -1
        return {
            "candidates": candidates,
            "retrieve_index": torch.arange(b * (K + 1), dtype=torch.int64, device=device).reshape(b, K + 1),
            "retrieve_next_token": next_token,
            "retrieve_next_sibling": torch.full((b, K + 1), -1, dtype=torch.int64, device=device),
            "predicts": torch.zeros(b * (K + 1), dtype=torch.int32, device=device),
            "accept_index": torch.full((b, K + 1), -1, dtype=torch.int32, device=device),
            "accept_token_num": torch.empty((b,), dtype=torch.int32, device=device),
        }

    def _verify_greedy(self, logits, layout: dict) -> None:
        """``eagle_sample``'s greedy branch: ``target_predict`` the argmax of each row of ``logits [b * (K + 1), V]``
        float32, verified by ``verify_tree_greedy_func`` as on the engine's platform (``sglang_dispatch``)."""
        b = layout["candidates"].shape[0]
        target_predict = self.torch.argmax(logits, dim=-1).reshape(b, -1)
        sglang_dispatch.verify_greedy(
            self.sglang.verify_tree_greedy_func,
            self.platform,
            on_gpu=self.device.type == "cuda",
            predicts=layout["predicts"],
            accept_index=layout["accept_index"],
            accept_token_num=layout["accept_token_num"],
            candidates=layout["candidates"],
            retrieve_index=layout["retrieve_index"],
            retrieve_next_token=layout["retrieve_next_token"],
            retrieve_next_sibling=layout["retrieve_next_sibling"],
            target_predict=target_predict,
        )

    def _verify_sampled(self, case, requests, group, logits, layout: dict) -> None:
        """``eagle_sample``'s sampling branch with ``speculative_use_rejection_sampling``: SGLang's softmax with one
        temperature per row, its top-k renormalisation where a request has a top-k (a greedy request of a mixed
        batch: temperature 1, top-k 1), the coins of ``_verify_coins`` and the Triton chain sampler."""
        torch, device = self.torch, self.device
        b, width = layout["candidates"].shape
        K, V = width - 1, case.vocab_size
        temperature = torch.tensor([p.temperature for p in group], dtype=torch.float32, device=device)
        target = self._softmax(logits, temperature.repeat_interleave(width).unsqueeze(1))
        top_ks = [p.top_k for p in group]
        if any(k != self.sglang.TOP_K_ALL for k in top_ks):  # SamplingBatchInfo.need_top_k_sampling
            renorm = self._top_k_renorm(case.temperature[requests].tolist())
            target = renorm(target, torch.tensor(top_ks, dtype=torch.int32, device=device).repeat_interleave(width))
        drafts = case.draft_offsets()
        if case.draft_probs is None:
            q = torch.zeros((b, K, V), dtype=torch.float32, device=device)
            q.scatter_(2, layout["candidates"][:, 1:, None], 1.0)
        else:
            q = torch.tensor(
                np.stack([case.draft_probs[drafts[i] : drafts[i + 1]] for i in requests]).reshape(b, K, V),
                dtype=torch.float32,
                device=device,
            )
        if case.seeds is None:  # _verify_coins without a sampling seed
            coins = torch.rand_like(layout["candidates"], dtype=torch.float32, device=device)
            coins_final = torch.rand((b,), dtype=torch.float32, device=device)
        else:
            positions = np.zeros(case.batch_size, dtype=np.int64) if case.positions is None else case.positions
            coins, coins_final = self.eagle.seeded_coins(
                [p.sampling_seed for p in group], positions[requests], draft_token_num=width
            )
        self.sglang.chain_speculative_sampling_triton(
            predicts=layout["predicts"],
            accept_index=layout["accept_index"],
            accept_token_num=layout["accept_token_num"],
            candidates=layout["candidates"],
            retrive_index=layout["retrieve_index"],
            retrive_next_token=layout["retrieve_next_token"],
            retrive_next_sibling=layout["retrieve_next_sibling"],
            uniform_samples=coins,
            uniform_samples_for_final_sampling=coins_final,
            target_probs=target.reshape(b, width, V).contiguous(),
            draft_probs=q,
            threshold_single=1.0,
            threshold_acc=1.0,
            deterministic=True,
        )

    def _softmax(self, logits, temperatures):
        """The target probabilities ``[rows, V]`` float32 of ``logits [rows, V]`` at ``temperatures [rows, 1]``, as
        the release's ``eagle_sample`` computes them (releases.yaml's ``softmax``: SGLang's, or torch's of the
        logits over the temperatures)."""
        values = {"logits": logits, "temperatures": temperatures, "input": logits / temperatures, "dim": -1}
        return self.release.call("softmax", self.sglang.softmax, values)

    def _top_k_renorm(self, temperatures: list):
        """SGLang's top-k renormalisation where this release keeps it (releases.yaml's ``top_k_renorm_prob``);
        ``OutsideContract`` where it has no kernel on this platform (none on a CPU; FlashInfer's on CUDA)."""
        renorm, why = None, f" (renorm.py resolves none for platform {self.platform.name})"
        if self.platform.name == "cuda":  # renorm.py resolves by this process's platform: FlashInfer's on CUDA
            try:
                renorm, why = self.release.load("top_k_renorm_prob"), ""
            except releases.UntaughtRelease as exc:
                why = f" ({exc})"
        if renorm is None:
            raise OutsideContract(
                f"temperature is {temperatures}: a batch mixing greedy and sampled requests needs SGLang's top-k "
                f"renormalisation, which has no kernel on this platform (FlashInfer's on CUDA): judged on a GPU{why}"
            )
        return renorm

    def _sample_without_drafts(self, logits, group) -> np.ndarray:
        """The adapter's stand-in for SGLang's sampler on ``logits [b, V]`` (no claimed requirement judges it): the
        argmax for a greedy request (top-k 1), else a draw from SGLang's softmax."""
        torch = self.torch
        temperature = torch.tensor([p.temperature for p in group], dtype=torch.float32, device=self.device)
        probs = self._softmax(logits, temperature.unsqueeze(1))
        drawn = torch.multinomial(probs, 1).flatten()
        greedy = torch.tensor([p.top_k <= 1 for p in group], device=self.device)
        return torch.where(greedy, torch.argmax(logits, dim=-1), drawn).cpu().numpy()

    # -- budget A -------------------------------------------------------------------------------

    def budget_state(self, start, end, max_num_reqs, scope="section", max_spec_len=0):
        return SglangBudget(self, list(start), list(end), max_num_reqs)
