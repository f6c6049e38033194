"""Kernel-level adapter for lmdeploy 0.18.0's speculative verifiers (``specconform.harness.adapters.lmdeploy:make``).

Judged as ``lmdeploy-0.18.0`` (the pure-torch ``DefaultRejectionSamplingImpl`` of
``pytorch/backends/default/rejection_sampling.py``, which lmdeploy's dlinfer backends inherit) and as
``lmdeploy-0.18.0-triton`` (``make_triton``: ``CudaRejectionSamplingImpl``, the Triton kernels of
``pytorch/kernels/cuda/rejection_sampling.py`` that its CUDA backend builds; on a CPU under Triton's
interpreter). Each is driven as lmdeploy's PyTorch engine drives it (``pytorch/spec_decode/spec_agent.py``):

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
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from dataclasses import fields

import numpy as np

from specconform.specs.interface import RejectionCase

from .. import products

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


def import_lmdeploy(backend: str) -> types.SimpleNamespace:
    """lmdeploy's verifier modules for ``backend`` (``torch`` or ``triton``), imported with the package
    root stood in for."""
    import torch

    if backend == "triton" and not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("lmdeploy's Triton verifier runs on a CPU only with TRITON_INTERPRET=1 set before start")
    if backend == "triton" and os.environ.get("TRITON_INTERPRET") == "1":
        _interpreter_takes_list_grids()
    spec = importlib.util.find_spec("lmdeploy")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("lmdeploy is not installed (pip install --no-deps lmdeploy==0.18.0)")
    root = list(spec.submodule_search_locations)[0]
    if "lmdeploy" not in sys.modules or not hasattr(sys.modules["lmdeploy"], "_specconform_stand_in"):
        for name in _NAMESPACES:
            path = os.path.join(root, *name.split(".")[1:])
            namespace = importlib.machinery.ModuleSpec(name, None, is_package=True)
            namespace.submodule_search_locations = [path]
            _stand_in(name, __path__=[path], __spec__=namespace, _specconform_stand_in=True)
        _stand_in("lmdeploy.pytorch.backends.base", BuildSpec=_BuildSpec)
        _stand_in("lmdeploy.messages", LogitsProcessor=object)
        _stand_in("lmdeploy.pytorch.messages", SchedulerSequence=object)
        _stand_in("lmdeploy.pytorch.engine.guided_process", GuidedDecodingManager=object)
    modules = types.SimpleNamespace()
    modules.logits = importlib.import_module("lmdeploy.pytorch.engine.logits_process")
    modules.strategy = importlib.import_module("lmdeploy.pytorch.strategies.ar.sampling")
    if backend == "torch":
        impl = importlib.import_module("lmdeploy.pytorch.backends.default.rejection_sampling")
        multinomial = importlib.import_module("lmdeploy.pytorch.backends.default.multinomial_sampling")
        modules.verifier = impl.DefaultRejectionSamplingImpl()
        modules.multinomial = multinomial.DefaultMultinomialSamplingImpl()
    else:
        kernels = sys.modules["lmdeploy.pytorch.kernels.cuda"]
        kernel = importlib.import_module("lmdeploy.pytorch.kernels.cuda.multinomial_sampling")
        kernels.multinomial_sampling = kernel.multinomial_sampling  # what kernels/cuda/__init__.py exports
        impl = importlib.import_module("lmdeploy.pytorch.backends.cuda.rejection_sampling")
        multinomial = importlib.import_module("lmdeploy.pytorch.backends.cuda.multinomial_sampling")
        modules.verifier = impl.CudaRejectionSamplingImpl()
        modules.multinomial = multinomial.TritonMultinomialSamplingImpl()
    # the backend registry lmdeploy's sampling asks for its multinomial sampler (backends/selector.py)
    chosen = types.SimpleNamespace(build_op=lambda build_spec, **_: modules.multinomial)
    sys.modules["lmdeploy.pytorch.backends"].get_backend = lambda device_type=None: chosen
    modules.reject_sampler = importlib.import_module("lmdeploy.pytorch.spec_decode.reject_sampler")
    return modules


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


class LmdeployEngine:
    def __init__(self, backend: str):
        import torch

        self.torch = torch
        self.backend = backend
        self.lmdeploy = import_lmdeploy(backend)
        self.device = torch.device("cuda" if backend == "triton" and torch.cuda.is_available() else "cpu")
        self.name = "lmdeploy-0.18.0" if backend == "torch" else "lmdeploy-0.18.0-triton"
        from importlib.metadata import version

        where = torch.cuda.get_device_name() if self.device.type == "cuda" else "cpu"
        if backend == "triton" and self.device.type == "cpu":
            where += " (Triton interpreter)"
        impl = type(self.lmdeploy.verifier).__name__
        self.version = f"lmdeploy-{version('lmdeploy')} {impl} torch-{torch.__version__} {where}"
        self.strategy = self.lmdeploy.strategy.ARSamplingStrategy(pad_token_id=0)
        # with its reasons: harness/products/lmdeploy/profile.yaml (lmdeploy-triton/ for the Triton backend)
        self.profile = products.profile_of("lmdeploy" if backend == "torch" else "lmdeploy-triton")

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
            sampler = self.lmdeploy.reject_sampler.RejectionSampler.__new__(
                self.lmdeploy.reject_sampler.RejectionSampler
            )
            torch.nn.Module.__init__(sampler)
            sampler._impl = self.lmdeploy.verifier  # what RejectionSampler.__init__ builds for this backend
            output, rejected, _ = sampler(processed.view(len(requests), K + 1, V), draft_ids, inputs, draft_probs=q)
            tokens[requests, : K + 1] = output.cpu().numpy()
            emitted[requests] = K + 1 - rejected.cpu().numpy()
        return tokens, emitted
