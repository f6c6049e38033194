"""Kernel-level adapter for lmdeploy's speculative verifiers (``specconform.harness.adapters.lmdeploy:make``), one
adapter for the releases ``harness/products/lmdeploy/releases.yaml`` teaches it (0.15.0 to 0.18.0): per release, where
it finds what it drives, the signature of ``RejectionSampler.forward`` and the name each factory is judged as. Any
other release is refused with a ``UsageError`` naming those.

From 0.17.0 ``make`` is judged as ``lmdeploy-<version>``: the pure-torch ``DefaultRejectionSamplingImpl`` of
``pytorch/backends/default/rejection_sampling.py``, which lmdeploy's dlinfer backends inherit. ``make_triton`` is
judged as ``lmdeploy-<version>-triton``: ``CudaRejectionSamplingImpl``, the Triton kernels of
``pytorch/kernels/cuda/rejection_sampling.py`` that its CUDA backend builds; on a CPU they run under Triton's
interpreter. 0.15.0 and 0.16.0 have one verifier, the Triton kernels of ``spec_decode/reject_sampler.py`` (the same
file in both), and their ``spec_agent.py`` draws the bonus token before verification (``rows_of``). Each is driven
as lmdeploy's PyTorch engine drives it (``pytorch/spec_decode/spec_agent.py``):

- sampling inputs come from lmdeploy's own ``ARSamplingStrategy.make_sampling_inputs`` over one stand-in
  sequence per request: a temperature of 0 becomes ``top_k = 1`` as ``SamplingParam.from_gen_config`` makes it
  (``pytorch/messages.py`` l.119-122), a case's seed is the request's ``random_seed`` and its position the
  sequence's ``num_valid_ids`` (lmdeploy's sampling offset); they are expanded to one row per target token as
  ``spec_agent._expand_sampling_inputs`` expands them (repeated per token, offsets advanced by the position);
- the target logits pass lmdeploy's ``FusedLogitsProcessor`` (temperature) and then its ``RejectionSampler``
  (``pytorch/spec_decode/reject_sampler.py``: greedy batches through ``forward_greedy``, otherwise the bonus
  token drawn by ``FusedLogitsProcessor.sampling`` and the drafts verified by the backend's ``forward``), with
  the backend's own multinomial sampler for the bonus token. lmdeploy verifies one ``num_speculative_tokens``
  for the whole batch, so a case's requests are verified in groups of equal ``K``; ``K = 0`` requests take the
  engine's prefill path (``FusedLogitsProcessor`` then ``sampling``);
- emitted tokens are the verifier's ``output_token_ids`` (``-1``-padded) and each request's count is
  ``K + 1 - num_rejected_tokens``, both the verifier's own outputs.

lmdeploy's engine never hands the verifier draft probabilities (``spec_agent.py`` l.476 passes none): its
drafts are verified as one-hot. The backend's ``draft_probs`` argument is judged as given where a case has
them. lmdeploy has no thinking budget (forced rows are refused with a ``ValueError`` naming the field), no
input validation, and its counters read the verifier's rows inside ``pytorch/engine/engine_loop.py``, which
needs the whole engine: counting and metrics are not claimed. The verification draws are lmdeploy's own
(``torch.rand`` and ``exponential_`` on the global generator, whatever the request's seed).

The package root is stood in for (``sys.modules`` entries whose ``__path__`` is the installed folder), so
``lmdeploy/__init__.py`` and the engine's heavy modules never run; the three modules that only lend
``logits_process.py`` type names (``lmdeploy.messages``, ``lmdeploy.pytorch.messages``,
``lmdeploy.pytorch.engine.guided_process``) and the backend registry's base are stand-ins. Nothing of
lmdeploy's code is copied here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import fields
from importlib.metadata import version

import numpy as np

from specconform.specs.interface import RejectionCase

from .. import products
from ..core import UsageError
from ..products import releases

PRODUCT = "lmdeploy"  # whose releases.yaml names the releases this adapter drives and what each is judged as

# namespace packages whose __init__ would import the whole engine
_NAMESPACES = (
    "lmdeploy",
    "lmdeploy.pytorch",
    "lmdeploy.pytorch.backends",
    "lmdeploy.pytorch.backends.default",
    "lmdeploy.pytorch.backends.cuda",
    "lmdeploy.pytorch.engine",
    "lmdeploy.pytorch.kernels",
    "lmdeploy.pytorch.kernels.cuda",
    "lmdeploy.pytorch.nn",
    "lmdeploy.pytorch.spec_decode",
    "lmdeploy.pytorch.strategies",
    "lmdeploy.pytorch.strategies.ar",
    "lmdeploy.pytorch.strategies.base",
)


class _BuildSpec:
    """Stands in for ``lmdeploy.pytorch.backends.base.BuildSpec`` (a generic marker class)."""

    def __class_getitem__(cls, item):
        return cls


def _stand_in(name: str, **attributes) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module


def import_lmdeploy(backend: str, release: releases.Release | None = None) -> types.SimpleNamespace:
    """lmdeploy's verifier modules for ``backend`` (``torch`` or ``triton``) where ``release`` keeps them
    (``releases.yaml``'s imports), imported with the package root stood in for. ``verifier`` is the backend's
    verification implementation, or ``None`` where the release verifies with ``reject_sampler.py``'s own Triton
    kernels (before 0.17.0). ``release`` defaults to the installed one."""
    import torch

    if release is None:
        release, _ = installed_release("make" if backend == "torch" else "make_triton")
    triton = backend == "triton" or f"{backend}.verifier" not in release.imports
    if triton and not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError(
            f"lmdeploy {release.version}'s {backend} verifier runs Triton kernels: on a CPU only with "
            "TRITON_INTERPRET=1 set before start"
        )
    if triton and os.environ.get("TRITON_INTERPRET") == "1":
        _interpreter_takes_list_grids()
    spec = importlib.util.find_spec("lmdeploy")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"lmdeploy is not installed (pip install --no-deps lmdeploy=={release.version})")
    root = list(spec.submodule_search_locations)[0]
    if "lmdeploy" not in sys.modules or not hasattr(sys.modules["lmdeploy"], "_specconform_stand_in"):
        for name in _NAMESPACES:
            path = os.path.join(root, *name.split(".")[1:])
            namespace = importlib.machinery.ModuleSpec(name, None, is_package=True)
            namespace.submodule_search_locations = [path]
            _stand_in(name, __path__=[path], __spec__=namespace, _specconform_stand_in=True)
        _stand_in("lmdeploy.pytorch.backends.base", BuildSpec=_BuildSpec, OpType=_OP_TYPES)
        _stand_in("lmdeploy.messages", LogitsProcessor=object)
        _stand_in("lmdeploy.pytorch.messages", SchedulerSequence=object)
        _stand_in("lmdeploy.pytorch.engine.guided_process", GuidedDecodingManager=object)
    if backend == "triton":
        kernels = sys.modules["lmdeploy.pytorch.kernels.cuda"]
        kernel = importlib.import_module("lmdeploy.pytorch.kernels.cuda.multinomial_sampling")
        kernels.multinomial_sampling = kernel.multinomial_sampling  # what kernels/cuda/__init__.py exports
    try:
        modules = types.SimpleNamespace(
            logits=release.load("logits"),
            strategy=release.load("strategy"),
            multinomial=release.load(f"{backend}.multinomial")(),
            verifier=release.load(f"{backend}.verifier")() if f"{backend}.verifier" in release.imports else None,
        )
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    # the backend registry lmdeploy's sampling asks for its multinomial sampler (backends/selector.py): by build spec
    # from 0.18.0, by OpType and a builder before
    builder = types.SimpleNamespace(build=lambda: modules.multinomial)
    chosen = types.SimpleNamespace(
        build_op=lambda build_spec, **_: modules.multinomial, get_layer_impl_builder=lambda op_type: builder
    )
    # the package module's namespace is set as a dict: its attributes are the stand-in's, not lmdeploy's own
    sys.modules["lmdeploy.pytorch.backends"].__dict__.update(
        get_backend=lambda device_type=None: chosen, OpType=_OP_TYPES
    )
    try:
        modules.reject_sampler = release.load("reject_sampler")
        release.check_signature("RejectionSampler.forward", modules.reject_sampler.RejectionSampler.forward)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    return modules


# stands in for lmdeploy.pytorch.backends.base.OpType, the registry key lmdeploy before 0.18.0 builds its samplers by
_OP_TYPES = types.SimpleNamespace(MultinomialSampling="MultinomialSampling", RejectionSampling="RejectionSampling")


def _interpreter_takes_list_grids() -> None:
    """Triton's interpreter adds a tuple to the grid it is given, so the list grid lmdeploy's multinomial
    kernel launches with (``kernels/cuda/multinomial_sampling.py`` l.80), which compiled Triton takes, raises
    ``TypeError`` there; it is handed to the interpreter as a tuple. Compiled Triton is left alone."""
    from triton.runtime import interpreter

    original = interpreter.GridExecutor.__init__
    if getattr(original, "_specconform_tuple_grid", False):
        return

    def init(self, fn, arg_names, grid, *args, **kwargs):
        original(self, fn, arg_names, tuple(grid) if isinstance(grid, list) else grid, *args, **kwargs)

    init._specconform_tuple_grid = True
    interpreter.GridExecutor.__init__ = init


def release_of(version: str, factory: str) -> tuple[releases.Release, str]:
    """lmdeploy ``version`` as ``harness/products/lmdeploy/releases.yaml`` teaches it, and the name ``factory`` is
    judged as there; a ``UsageError`` names the releases taught when it is not one of them."""
    try:
        release = releases.release(PRODUCT, version)
        return release, release.name_of(factory)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None


def installed_release(factory: str) -> tuple[releases.Release, str]:
    """The installed lmdeploy's release and the name ``factory`` is judged as (``release_of``); a ``RuntimeError``
    naming the newest release taught where lmdeploy is not installed."""
    if importlib.util.find_spec("lmdeploy") is None:
        newest = releases.taught(PRODUCT)[-1]
        raise RuntimeError(f"lmdeploy is not installed (pip install --no-deps lmdeploy=={newest})")
    return release_of(version("lmdeploy"), factory)


def make():
    return LmdeployEngine("torch")


def make_triton():
    return LmdeployEngine("triton")


def _sequence(temperature: float, seed, position: int, index: int):
    """A stand-in ``SchedulerSequence`` with the fields ``make_sampling_inputs`` reads; a temperature of 0
    is lmdeploy's greedy request (``top_k = 1``, temperature 1), as ``SamplingParam.from_gen_config`` makes it."""
    greedy = temperature <= 0
    param = types.SimpleNamespace(
        temperature=1.0 if greedy else float(temperature),
        top_k=1 if greedy else 0,
        top_p=1.0,
        min_p=0.0,
        repetition_penalty=1.0,
        random_seed=None if seed is None else int(seed),
        response_format=None,
        bad_words=[],
        stop_words=[],
        ignore_eos=True,
        min_new_tokens=0,
        logits_processors=None,
        num_logprobs=-1,
        repetition_ngram_size=0,
        repetition_ngram_threshold=0,
    )
    return types.SimpleNamespace(
        sampling_param=param,
        num_valid_ids=int(position),
        num_new_tokens=1,
        session=types.SimpleNamespace(session_id=index),
        seq_id=index,
    )


def rows_of(inputs, num_tokens: int, bonus: bool):
    """The bonus rows (``bonus``: every ``num_tokens``-th, a strided view) or the draft rows (the others) of
    expanded ``SamplingInputs``, as ``spec_agent._slice_sampling_inputs`` of lmdeploy before 0.17.0 takes them
    (0.16.0's lines 83-148): tensors, and arrays and lists of one entry per row, are sliced, the other fields kept."""
    import torch

    size = inputs.batch_size // num_tokens
    kept = {}
    for f in fields(inputs):
        value = getattr(inputs, f.name)
        # every tensor has one row per token (expanded); arrays and lists only where their length says so
        per_row = isinstance(value, torch.Tensor) or (
            isinstance(value, (np.ndarray, list, tuple)) and len(value) == inputs.batch_size
        )
        if f.name == "batch_size":
            value = size if bonus else size * (num_tokens - 1)
        elif per_row and bonus:
            value = value[num_tokens - 1 :: num_tokens]
        elif per_row and isinstance(value, (torch.Tensor, np.ndarray)):
            value = value.reshape(size, num_tokens, *value.shape[1:])[:, :-1].reshape(-1, *value.shape[1:])
        elif per_row:
            value = type(value)(v for i, v in enumerate(value) if i % num_tokens != num_tokens - 1)
        kept[f.name] = value
    return type(inputs)(**kept)


class LmdeployEngine:
    def __init__(self, backend: str):
        import torch

        self.torch = torch
        self.backend = backend
        # a release the adapter was not taught is refused before any of its code is imported
        self.release, self.name = installed_release("make" if backend == "torch" else "make_triton")
        self.lmdeploy = import_lmdeploy(backend, self.release)
        triton = backend == "triton" or self.lmdeploy.verifier is None
        self.device = torch.device("cuda" if triton and torch.cuda.is_available() else "cpu")
        where = torch.cuda.get_device_name() if self.device.type == "cuda" else "cpu"
        if triton and self.device.type == "cpu":
            where += " (Triton interpreter)"
        verifier = self.lmdeploy.verifier
        impl = "reject_sampler.rejection_sample" if verifier is None else type(verifier).__name__
        self.version = f"lmdeploy-{version('lmdeploy')} {impl} torch-{torch.__version__} {where}"
        self.strategy = self.lmdeploy.strategy.ARSamplingStrategy(pad_token_id=0)
        # with its reasons: harness/products/lmdeploy/profile.yaml (lmdeploy-triton/ for the Triton backend), named for
        # this release
        product = "lmdeploy" if backend == "torch" else "lmdeploy-triton"
        self.profile = dataclasses.replace(products.profile_of(product), name=self.name)

    # -- sampling inputs, as the engine builds them -----------------------------------------------

    def sampling_inputs(self, case: RejectionCase, requests: np.ndarray, num_tokens: int):
        """lmdeploy's ``SamplingInputs`` for ``requests``, expanded to ``num_tokens`` rows each as
        ``spec_agent._expand_sampling_inputs`` expands them."""
        torch = self.torch
        positions = np.zeros(case.batch_size, dtype=np.int64) if case.positions is None else case.positions
        seqs = [_sequence(float(case.temperature[i]), case.seed_of(i), positions[i], int(i)) for i in requests]
        inputs = self.strategy.make_sampling_inputs(seqs)
        if num_tokens == 1:
            return inputs
        expanded = {}
        for f in fields(inputs):
            value = getattr(inputs, f.name)
            if isinstance(value, torch.Tensor):
                value = value.repeat_interleave(num_tokens, dim=0)
                if f.name == "random_offsets":
                    value = value + torch.arange(num_tokens).repeat(inputs.batch_size)
            elif f.name == "batch_size":
                value = value * num_tokens
            elif isinstance(value, (list, tuple)) and len(value) == inputs.batch_size:
                value = type(value)(v for v in value for _ in range(num_tokens))
            expanded[f.name] = value
        return type(inputs)(**expanded)

    def _processed(self, logits, inputs):
        """``FusedLogitsProcessor``'s processed logits (temperature applied)."""
        processed, _ = asyncio.run(self.lmdeploy.logits.FusedLogitsProcessor(inputs)(logits))
        return processed

    def _verify(self, processed, draft_ids, inputs, draft_probs, K: int):
        """lmdeploy's ``RejectionSampler`` over ``processed`` ([n * (K + 1), V] float32, each request's draft rows then
        its bonus row) and ``draft_ids`` ([n, K] int64), called as the release's ``spec_agent.py`` calls it: from
        0.17.0 with the expanded rows, the sampler drawing the bonus token; before, with the bonus token already drawn
        from the bonus rows and the inputs of the draft rows alone. Returns ``output_token_ids`` ([n, K + 1] int64,
        -1-padded) and ``num_rejected_tokens`` ([n] int64)."""
        n, V = draft_ids.shape[0], processed.shape[-1]
        sampler_class = self.lmdeploy.reject_sampler.RejectionSampler
        sampler = sampler_class.__new__(sampler_class)
        self.torch.nn.Module.__init__(sampler)
        values = {"target_logits": processed.view(n, K + 1, V), "draft_token_ids": draft_ids}
        values.update(draft_probs=draft_probs, expanded_sampling_inputs=inputs)
        if self.lmdeploy.verifier is not None:
            sampler._impl = self.lmdeploy.verifier  # what RejectionSampler.__init__ builds for this backend
        else:  # spec_agent._rejection_sampling before 0.17.0 (its lines 472-491 in 0.16.0)
            bonus_inputs = rows_of(inputs, K + 1, bonus=True)
            bonus_logits = processed[K :: K + 1]
            values["bonus_token_ids"] = self.lmdeploy.logits.FusedLogitsProcessor(bonus_inputs).sampling(bonus_logits)
            values["target_logits"] = values["target_logits"][:, :-1].contiguous()
            values["sampling_inputs"] = rows_of(inputs, K + 1, bonus=False)
        output, rejected, _ = self.release.call("RejectionSampler.forward", sampler, values)
        return output, rejected

    # -- rejection sampling -----------------------------------------------------------------------

    def rejection_sample(self, case: RejectionCase):
        torch = self.torch
        if case.forced_token_ids is not None and (case.forced_token_ids != -1).any():
            row = int(np.flatnonzero(case.forced_token_ids != -1)[0])
            raise ValueError(
                f"forced_token_ids[{row}] is {int(case.forced_token_ids[row])}: lmdeploy has no thinking budget "
                "and its verifier no forced rows"
            )
        V = case.vocab_size
        rows, drafts = case.row_offsets(), case.draft_offsets()
        width = int(case.num_draft_tokens.max(initial=0)) + 1
        tokens = np.full((case.batch_size, width), -1, dtype=np.int64)
        emitted = np.zeros(case.batch_size, dtype=np.int64)
        for K in sorted({int(k) for k in case.num_draft_tokens}):
            requests = np.flatnonzero(case.num_draft_tokens == K)
            logits = torch.tensor(
                np.concatenate([case.target_logits[rows[i] : rows[i + 1]] for i in requests]),
                dtype=torch.float32,
                device=self.device,
            )
            inputs = self.sampling_inputs(case, requests, K + 1).to_device(self.device)
            processed = self._processed(logits, inputs)
            if K == 0:  # the prefill path: no drafts, one sampled token
                out = self.lmdeploy.logits.FusedLogitsProcessor(inputs).sampling(processed)
                tokens[requests, 0] = out.cpu().numpy()
                emitted[requests] = 1
                continue
            draft_ids = torch.tensor(
                np.stack([case.draft_token_ids[drafts[i] : drafts[i + 1]] for i in requests]),
                dtype=torch.int64,
                device=self.device,
            )
            q = None
            if case.draft_probs is not None:
                q = torch.tensor(
                    np.stack([case.draft_probs[drafts[i] : drafts[i + 1]] for i in requests]).reshape(
                        len(requests), K, V
                    ),
                    dtype=torch.float32,
                    device=self.device,
                )
            output, rejected = self._verify(processed, draft_ids, inputs, q, K)
            tokens[requests, : K + 1] = output.cpu().numpy()
            emitted[requests] = K + 1 - rejected.cpu().numpy()
        return tokens, emitted
