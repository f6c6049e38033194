"""The embedded reference engine: continuous batching, speculative decoding, the thinking budget.

One engine thread owns a persistent batch of slots. Every step it admits waiting requests into free
slots and condenses finished ones away (a real ``impl.BatchUpdate``: removed, added, moved), drafts
``K`` tokens per sampled request from a noisy copy of the target (``q`` = its softmax), verifies
them with ``impl.rejection_sample`` under the budget's forced rows, and commits. Each forward pass runs
the whole batch at once in float64, right-padded: a causal model never attends to the padding after a
request's tokens, so a request's logits do not depend on the rest of the batch.

Requests are validated before they enter the batch (``Engine.check``), so a bad request fails alone.
A request cancelled by its client (``Request.cancel``) leaves the batch at the next step.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

import impl

from .model import TinyModel


@dataclass
class Request:
    prompt_token_ids: list[int]
    max_tokens: int
    temperature: float
    seed: int
    budget: int | None
    on_tokens: Callable[[Request], None] = lambda request: None  # called from the engine thread
    output: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    id: int = field(default_factory=itertools.count().__next__)

    def cancel(self) -> None:
        """Stop generating (the client went away); the engine drops the request at its next step."""
        self.cancelled.set()


class Engine:
    def __init__(
        self,
        tiny: TinyModel,
        *,
        num_speculative_tokens: int = 0,
        max_num_reqs: int = 64,
        draft_noise: float = 0.5,
        device: str = "cpu",
    ):
        from transformers import AutoModelForCausalLM

        self.tiny = tiny
        self.k = num_speculative_tokens
        self.max_num_reqs = max_num_reqs
        self.draft_noise = draft_noise
        self.device = torch.device(device)
        self.model = AutoModelForCausalLM.from_pretrained(tiny.path, dtype=torch.float64).to(self.device).eval()
        self.context_length = self.model.config.max_position_embeddings
        self.vocab_size = self.model.config.vocab_size
        self.budget = impl.ThinkingBudgetState(
            tiny.start_token_ids, tiny.end_token_ids, max_num_reqs, max_spec_len=max(self.k, 1), device=self.device
        )
        self.waiting: queue.Queue[Request] = queue.Queue()
        self.slots: list[Request | None] = []
        self.wake = threading.Event()
        self.steps = 0
        self.thread = threading.Thread(target=self._loop, name="specconform-engine", daemon=True)
        self.thread.start()

    def check(self, request: Request) -> None:
        """Raise ValueError naming the field if ``request`` cannot run here; nothing is changed."""
        prompt = request.prompt_token_ids
        if not prompt or any(
            isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.vocab_size for t in prompt
        ):
            raise ValueError(f"prompt_token_ids must be a non-empty list of token ids in [0, {self.vocab_size})")
        impl.AddedRequest(0, request.budget, prompt)  # the budget as the kernel API validates it
        positions = self.context_length - self.k  # the drafts of the last step need K positions past the output
        if len(prompt) + request.max_tokens > positions:
            raise ValueError(
                f"this model's context holds {positions} tokens with {self.k} speculative positions; the request "
                f"asks for {len(prompt) + request.max_tokens} ({len(prompt)} in the prompt, {request.max_tokens} "
                f"to generate)"
            )

    def submit(self, request: Request) -> Request:
        self.check(request)
        self.waiting.put(request)
        self.wake.set()
        return request

    # -- the step loop --------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            if not self.slots and self.waiting.empty():
                self.wake.wait()
                self.wake.clear()
            try:
                self._step()
            except Exception as exc:  # fail the requests in flight, keep serving
                for request in self.slots:
                    if request is not None and not request.done.is_set():
                        request.error = f"{type(exc).__name__}: {exc}"
                        request.finish_reason = "error"
                        request.done.set()
                        request.on_tokens(request)
                self.slots = []
                self.budget = impl.ThinkingBudgetState(
                    self.tiny.start_token_ids,
                    self.tiny.end_token_ids,
                    self.max_num_reqs,
                    max_spec_len=max(self.k, 1),
                    device=self.device,
                )

    def _sync_batch(self) -> None:
        for request in self.slots:
            if request is not None and request.cancelled.is_set() and not request.done.is_set():
                request.finish_reason = "cancelled"
                request.done.set()
        removed = [i for i, r in enumerate(self.slots) if r is not None and r.done.is_set()]
        live = [i for i, r in enumerate(self.slots) if r is not None and not r.done.is_set()]
        holes = sorted(removed)
        added = []
        slots = list(self.slots)
        for i in removed:
            slots[i] = None
        while len(live) + len(added) < self.max_num_reqs and not self.waiting.empty():
            request = self.waiting.get()
            if request.cancelled.is_set():  # abandoned before it started
                request.finish_reason = "cancelled"
                request.done.set()
                continue
            index = holes.pop(0) if holes else len(slots)
            if index == len(slots):
                slots.append(None)
            slots[index] = request
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
            self.budget.sync_batch(impl.BatchUpdate(len(live), tuple(removed), tuple(added), tuple(moved)))

    @torch.no_grad()
    def _logits(self, sequences: list[list[int]]) -> list[torch.Tensor]:
        """One forward pass over every sequence, right-padded; ``[len(seq), V]`` float64 logits per sequence."""
        width = max(len(tokens) for tokens in sequences)
        ids = torch.zeros((len(sequences), width), dtype=torch.int64)
        for row, tokens in enumerate(sequences):
            ids[row, : len(tokens)] = torch.tensor(tokens)
        logits = self.model(input_ids=ids.to(self.device)).logits
        return [logits[row, : len(tokens)] for row, tokens in enumerate(sequences)]

    def _draft(self, contexts: list[list[int]]) -> tuple[list[list[int]], list[list[np.ndarray]]]:
        """K draft tokens per slot from the noisy target, and the distributions they were drawn from."""
        drafts = [[] for _ in self.slots]
        probs = [[] for _ in self.slots]
        rngs = [np.random.default_rng([r.seed, len(c)]) for r, c in zip(self.slots, contexts)]
        for _ in range(self.k):
            rows = self._logits([c + d for c, d in zip(contexts, drafts)])
            for request, rng, row, slot_drafts, slot_probs in zip(self.slots, rngs, rows, drafts, probs):
                logits = row[-1].cpu().numpy()
                noisy = logits + self.draft_noise * rng.standard_normal(logits.shape)
                if request.temperature == 0:
                    token = int(np.argmax(noisy))
                    q = np.zeros_like(noisy)
                    q[token] = 1.0
                else:
                    z = noisy / request.temperature
                    q = np.exp(z - z.max())
                    q = q / q.sum()
                    token = int(rng.choice(len(q), p=q))
                slot_drafts.append(token)
                slot_probs.append(q)
        return drafts, probs

    def _step(self) -> None:
        self._sync_batch()
        if not self.slots:
            return
        contexts = [request.prompt_token_ids + request.output for request in self.slots]
        slot_drafts, slot_probs = self._draft(contexts)
        scored = self._logits([c + d for c, d in zip(contexts, slot_drafts)])
        target = torch.cat([logits[len(c) - 1 :] for logits, c in zip(scored, contexts)]).float()
        drafts = [token for d in slot_drafts for token in d]
        probs = [q for p in slot_probs for q in p]
        num_drafts = [len(d) for d in slot_drafts]
        num = torch.tensor(num_drafts, device=self.device)
        draft_ids = torch.tensor(drafts, dtype=torch.int64, device=self.device)
        forced = self.budget.forced_tokens(num, draft_ids)
        out = impl.rejection_sample(
            target,
            draft_ids,
            num,
            draft_probs=torch.tensor(np.array(probs), dtype=torch.float32, device=self.device) if probs else None,
            temperature=torch.tensor([r.temperature for r in self.slots], dtype=torch.float32, device=self.device),
            seeds=torch.tensor([r.seed for r in self.slots], dtype=torch.int64, device=self.device),
            positions=torch.tensor([len(c) for c in contexts], dtype=torch.int64, device=self.device),
            forced_token_ids=forced,
            max_spec_len=self.k,
        )
        self.budget.update_state(out.token_ids)
        log_probs = torch.log_softmax(target.double(), dim=1)
        tokens = out.token_ids.cpu().tolist()
        offset = 0
        for request, row, k in zip(self.slots, tokens, num_drafts):
            for j, token in enumerate(row):
                if token == -1:
                    break
                if token == self.tiny.eos_token_id:
                    request.finish_reason = "stop"
                    break
                request.output.append(token)
                request.logprobs.append(float(log_probs[offset + j, token]))
                if len(request.output) >= request.max_tokens:
                    request.finish_reason = "length"
                    break
            offset += k + 1
            if request.finish_reason:
                request.done.set()
            request.on_tokens(request)
        self.steps += 1
