"""The embedded reference engine: continuous batching, speculative decoding, the thinking budget.

One engine thread owns a persistent batch of slots. Every step it admits waiting requests into free
slots and condenses finished ones away (a real ``impl.BatchUpdate``: removed, added, moved), drafts
``K`` tokens per sampled request from a noisy copy of the target (``q`` = its softmax), verifies
them with ``impl.rejection_sample`` under the budget's forced rows, and commits. Each forward pass runs
the whole batch at once in float64 over one key/value pool with a row per request (``forward.py``), so
a request's logits do not depend on the rest of the batch; the prompts of newly admitted requests run in
a pass of their own, so they do not pad every decoding request to the prompt's length. The draft rows'
logits are the target's: the K + 1 passes of a step (the new context token, then each draft) give both.
The drafts' noise and draws are counter-based (``impl.rng``, keyed by the request's seed and position), so
the whole batch drafts in a few tensor operations and a request drafts the same alone or in any batch.

Requests are validated before they enter the batch (``Engine.check``), so a bad request fails alone.
A request cancelled by its client (``Request.cancel``) leaves the batch at the next step, which tells its
``on_tokens`` (finish reason ``cancelled``).

Faults: a step computes everything before it commits anything (cached lengths, budget state, outputs), so
a step that raises can be examined. A forward pass that raises is run again for each of its requests alone;
those that fail alone fail with the error and the rest of the batch carries on, untouched. A fault that no
single request reproduces, or one in a batch-wide stage (drafting, forced rows, rejection sampling, the
budget update), cannot be attributed: every request in the batch fails with an error that says so and
names the stage, and the engine starts again from an empty batch. A fault while delivering one request's
tokens fails that request only.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from specconform import impl
from specconform.impl import rng

from .forward import KVPool, forward
from .model import TinyModel

PURPOSE_DRAFT_NOISE = (3, 4)  # counter-based streams of the drafts' Gaussian noise (Box-Muller pair)
PURPOSE_DRAFT_SAMPLE = 5  # ... and of their exponential race, distinct from impl.rng's own purposes


@dataclass
class Request:
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float
    seed: int
    budget: int | None
    on_tokens: Callable[[Request], None] = lambda request: None  # called from the engine thread
    on_cancel: Callable[[Request], None] = lambda request: None  # called by ``cancel``, from the cancelling thread
    output: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    row: int | None = field(default=None, repr=False)  # its row of the engine's key/value pool, while in the batch
    cached: int = field(default=0, repr=False)  # how many of its tokens that row holds
    id: int = field(default_factory=itertools.count().__next__)

    def cancel(self) -> None:
        """Stop generating (the client went away); the engine drops the request at its next step."""
        self.cancelled.set()
        self.on_cancel(self)

    def drop(self) -> None:
        """End the cancelled request (from the engine thread) and tell its client, if it still listens."""
        self.finish_reason = "cancelled"
        self.done.set()
        with contextlib.suppress(Exception):
            self.on_tokens(self)

    def fail(self, error: str) -> None:
        """End the request with ``error`` (from the engine thread) and tell its client."""
        if self.done.is_set():
            return
        self.error, self.finish_reason = error, "error"
        self.done.set()
        with contextlib.suppress(Exception):  # if its client cannot be told, it sees ``done`` when it next looks
            self.on_tokens(self)


class StepFault(Exception):
    """A step failed in ``stage``; ``culprits`` are the requests that fail alone (empty: not attributable)."""

    def __init__(self, stage: str, cause: Exception, culprits: Sequence[Request] = ()):
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")
        self.stage, self.cause, self.culprits = stage, cause, list(culprits)


@contextlib.contextmanager
def _stage(name: str):
    """Run the body as stage ``name`` of a step: any exception but a StepFault becomes a StepFault of it."""
    try:
        yield
    except StepFault:
        raise
    except Exception as exc:
        raise StepFault(name, exc) from exc


def _uniforms(seeds: torch.Tensor, positions: torch.Tensor, purpose: int, vocab_size: int) -> torch.Tensor:
    """Counter-based uniforms ``[B, vocab_size]`` float64 in (0, 1) of the streams ``(seed, position, purpose)``;
    ``seeds``, ``positions``: ``[B]`` int64."""
    index = torch.arange(vocab_size, device=seeds.device)
    bits = rng.mix32(rng.stream_key(seeds, positions, purpose)[:, None] ^ index) >> 8
    return (bits.double() + 0.5) * 2.0**-24


def check_request(request: Request, vocab_size: int, context_length: int, k: int) -> None:
    """Raise ValueError naming the field if ``request`` cannot run on an engine of ``vocab_size`` tokens,
    ``context_length`` positions and ``k`` speculative tokens per step."""
    prompt = request.prompt_token_ids
    if not prompt or any(isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab_size for t in prompt):
        raise ValueError(f"prompt_token_ids must be a non-empty list of token ids in [0, {vocab_size})")
    impl.validate_budget(request.budget, "budget")  # as the kernel API validates it in sync_batch
    positions = context_length - k  # the drafts of the last step need K positions past the output
    if len(prompt) + request.max_tokens > positions:
        raise ValueError(
            f"this model's context holds {positions} tokens with {k} speculative positions; the request "
            f"asks for {len(prompt) + request.max_tokens} ({len(prompt)} in the prompt, {request.max_tokens} "
            f"to generate)"
        )


class Engine:
    def __init__(
        self,
        tiny: TinyModel,
        *,
        num_speculative_tokens: int = 0,
        max_num_reqs: int = 64,
        draft_noise: float = 0.5,
        device: str = "cpu",
        threads: int = 1,
    ):
        """``threads``: the intra-op threads of the engine's step loop (``torch.set_num_threads`` of its thread)."""
        from transformers import AutoModelForCausalLM

        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an integer of at least 1; got {threads!r}")
        self.threads = threads
        self.tiny = tiny
        self.k = num_speculative_tokens
        self.max_num_reqs = max_num_reqs
        self.draft_noise = draft_noise
        self.device = torch.device(device)
        self.model = AutoModelForCausalLM.from_pretrained(tiny.path, dtype=torch.float64).to(self.device).eval()
        self.context_length = self.model.config.max_position_embeddings
        self.vocab_size = self.model.config.vocab_size
        self.pool = KVPool(self.model, max_num_reqs, self.context_length + self.k + 1)
        self._empty_batch()
        self.waiting: queue.Queue[Request] = queue.Queue()
        self.wake = threading.Event()
        self.steps = 0
        self.thread = threading.Thread(target=self._loop, name="specconform-engine", daemon=True)
        self.thread.start()

    def _empty_batch(self) -> None:
        self.slots: list[Request] = []
        self.free_rows = list(range(self.max_num_reqs))
        self.budget = impl.ThinkingBudgetState(
            self.tiny.start_token_ids,
            self.tiny.end_token_ids,
            self.max_num_reqs,
            max_spec_len=max(self.k, 1),
            device=self.device,
        )

    def check(self, request: Request) -> None:
        """Raise ValueError naming the field if ``request`` cannot run here; nothing is changed."""
        check_request(request, self.vocab_size, self.context_length, self.k)

    def submit(self, request: Request) -> Request:
        self.check(request)
        self.waiting.put(request)
        self.wake.set()
        return request

    # -- the step loop --------------------------------------------------------------------------

    def _loop(self) -> None:
        # The model is tiny: one thread per engine computes a step faster than intra-op threads that wait on each other
        # (17x at 64 requests on two busy cores; on a 16-core Xeon four threads slowed every wave of the load benchmark
        # by 1.1x to 1.3x), hence the default of 1. The setting is this thread's own.
        torch.set_num_threads(self.threads)
        while True:
            if not self.slots and self.waiting.empty():
                self.wake.wait()
                self.wake.clear()
            try:
                self._step()
            except StepFault as fault:
                self._fail(fault)
            except Exception as exc:  # a bug outside every stage: nothing is known about the batch
                self._fail(StepFault("the engine's step loop", exc))

    def _fail(self, fault: StepFault) -> None:
        """Fail the culprits alone (nothing of the step was committed), or else the whole batch, clearly."""
        if fault.culprits:
            for request in fault.culprits:
                request.fail(f"this request failed alone in {fault}")
            return
        batch = [request for request in self.slots if not request.done.is_set()]
        for request in batch:
            request.fail(
                f"engine fault not attributable to one request, in {fault}; every request of the batch "
                f"({len(batch)}) failed and the engine starts again from an empty batch"
            )
        self._empty_batch()

    def _sync_batch(self) -> None:
        for request in self.slots:
            if request.cancelled.is_set() and not request.done.is_set():
                request.drop()
        removed = [i for i, r in enumerate(self.slots) if r.done.is_set()]
        live = [i for i, r in enumerate(self.slots) if not r.done.is_set()]
        holes = sorted(removed)
        added = []
        slots: list[Request | None] = list(self.slots)
        for i in removed:
            self.free_rows.append(slots[i].row)
            slots[i].row = None
            slots[i] = None
        while len(live) < self.max_num_reqs and not self.waiting.empty():  # live counts the added ones too
            request = self.waiting.get()
            if request.cancelled.is_set():  # abandoned before it started
                request.drop()
                continue
            index = holes.pop(0) if holes else len(slots)
            if index == len(slots):
                slots.append(None)
            slots[index] = request
            request.row, request.cached = self.free_rows.pop(), 0
            added.append(impl.AddedRequest(index, request.budget, request.prompt_token_ids))
            live.append(index)
        live.sort()
        moved = []
        while live and live[-1] >= len(live):  # condense: the highest live slot into the lowest hole
            hole = min(set(range(len(live))) - set(live))
            moved.append((live[-1], hole, impl.Move.UNIDIRECTIONAL))
            slots[hole], slots[live[-1]] = slots[live[-1]], None
            live = sorted(live[:-1] + [hole])
        self.slots = slots[: len(live)]
        if removed or added or moved:
            with _stage("updating the batch's budget state (sync_batch)"):
                self.budget.sync_batch(impl.BatchUpdate(len(live), tuple(removed), tuple(added), tuple(moved)))

    def _forward(self, stage: str, requests: list[Request], lengths: list[int], tokens: list[list[int]]):
        """``forward`` over ``requests``; if it raises, each request runs alone to find the ones that fail."""
        rows = [request.row for request in requests]
        try:
            return forward(self.model, self.pool, rows, lengths, tokens)
        except Exception as exc:
            culprits = []
            for i, request in enumerate(requests):
                try:
                    forward(self.model, self.pool, rows[i : i + 1], lengths[i : i + 1], tokens[i : i + 1])
                except Exception:
                    culprits.append(request)
            raise StepFault(stage, exc, culprits) from exc

    def _draft(
        self, logits: torch.Tensor, positions: torch.Tensor, seeds: torch.Tensor, temperature: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A draft token per slot from the noisy target ``logits [B, V]`` float64 at context ``positions [B]``
        int64, for requests of ``seeds [B]`` int64 and ``temperature [B]`` float64 (0: greedy); and the
        distribution ``q [B, V]`` float64 it was drawn from (one-hot for greedy requests)."""
        vocab = logits.shape[1]
        first, second = (_uniforms(seeds, positions, purpose, vocab) for purpose in PURPOSE_DRAFT_NOISE)
        noisy = logits + self.draft_noise * torch.sqrt(-2 * torch.log(first)) * torch.cos(2 * torch.pi * second)
        sampled = (temperature > 0).nonzero()[:, 0]
        tokens = noisy.argmax(dim=1)  # a greedy request's draft
        q = torch.nn.functional.one_hot(tokens, vocab).double()
        if len(sampled):  # the sampled requests' q, and a draw from it: the argmax of the exponential race
            q[sampled] = torch.softmax(noisy[sampled] / temperature[sampled, None], dim=1)
            exponentials = -torch.log(_uniforms(seeds[sampled], positions[sampled], PURPOSE_DRAFT_SAMPLE, vocab))
            tokens[sampled] = (q[sampled] / exponentials).argmax(dim=1)
        return tokens, q

    def _step(self) -> None:
        self._sync_batch()
        if not self.slots:
            return
        slots, k = self.slots, self.k
        contexts = [request.prompt_token_ids + request.output for request in slots]
        lengths = [request.cached for request in slots]
        # Newly admitted prompts run apart from the decoding requests, which then stay one token wide.
        last = torch.empty(len(slots), self.vocab_size, dtype=self.model.dtype, device=self.device)
        for stage, group in (
            ("reading the prompts of newly admitted requests", [i for i, n in enumerate(lengths) if n == 0]),
            ("the batch's forward pass", [i for i, n in enumerate(lengths) if n > 0]),
        ):
            if group:
                last[group] = self._forward(
                    stage,
                    [slots[i] for i in group],
                    [lengths[i] for i in group],
                    [contexts[i][lengths[i] :] for i in group],
                )
        rows = [last]  # [B, V] per position: after the context, then after each draft
        lengths = [len(context) for context in contexts]
        positions = torch.tensor(lengths, dtype=torch.int64, device=self.device)
        seeds = torch.tensor([r.seed for r in slots], dtype=torch.int64, device=self.device)
        temperature = torch.tensor([r.temperature for r in slots], dtype=torch.float64, device=self.device)
        drafts, probs = [], []
        for j in range(k):
            with _stage("drafting"):
                tokens, q = self._draft(rows[-1], positions + j, seeds, temperature)
            drafts.append(tokens)
            probs.append(q)
            rows.append(
                self._forward(
                    "the forward pass of the drafts", slots, [n + j for n in lengths], [[t] for t in tokens.tolist()]
                )
            )
        width = k + 1
        with _stage("forced rows and rejection sampling"):
            target = torch.stack(rows, dim=1).reshape(len(slots) * width, -1).float()  # slot-major rows
            num = torch.full((len(slots),), k, dtype=torch.int64, device=self.device)
            draft_ids = torch.stack(drafts, dim=1).reshape(-1) if k else torch.zeros(0, dtype=torch.int64)
            forced = self.budget.forced_tokens(num, draft_ids.to(self.device))
            out = impl.rejection_sample(
                target,
                draft_ids.to(self.device),
                num,
                draft_probs=torch.stack(probs, dim=1).reshape(len(slots) * k, -1).float() if k else None,
                temperature=temperature.float(),
                seeds=seeds,
                positions=positions,
                forced_token_ids=forced,
                max_spec_len=k,
            )
            chosen = out.token_ids.long()
            log_probs = torch.log_softmax(target.double(), dim=1).view(len(slots), width, -1)
            log_probs = log_probs.gather(2, chosen.clamp(min=0)[..., None])[..., 0].tolist()
            tokens, emitted = chosen.tolist(), out.num_emitted.tolist()
        # Commit: nothing above changed any state a request or the next step can see.
        with _stage("the budget update (update_state); the batch's budget state may be half-updated"):
            self.budget.update_state(out.token_ids)
        for request, context, row, logp, n in zip(slots, contexts, tokens, log_probs, emitted):
            try:
                self._deliver(request, len(context) + n - 1, row, logp)
            except Exception as exc:
                request.fail(f"this request failed alone while its tokens were delivered: {type(exc).__name__}: {exc}")
        self.steps += 1

    def _deliver(self, request: Request, cached: int, row: list[int], logp: list[float]) -> None:
        """Commit one request's step: its cache keeps the accepted drafts, its output takes ``row``."""
        request.cached = cached
        for token, lp in zip(row, logp):
            if token == -1:
                break
            if token == self.tiny.eos_token_id:
                request.finish_reason = "stop"
                break
            request.output.append(token)
            request.logprobs.append(lp)
            if len(request.output) >= request.max_tokens:
                request.finish_reason = "length"
                break
        if request.finish_reason:
            request.done.set()
        request.on_tokens(request)
