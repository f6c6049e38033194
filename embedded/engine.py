"""The embedded reference engine: continuous batching, speculative decoding, the thinking budget.

One engine thread owns a persistent batch of slots. Every step it admits waiting requests into free
slots and condenses finished ones away (a real ``impl.BatchUpdate``: removed, added, moved), drafts
``K`` tokens per sampled request from a noisy copy of the target (``q`` = its softmax), verifies
them with ``impl.rejection_sample`` under the budget's forced rows, and commits. The target runs in
float64, one request at a time, so a request's logits do not depend on the rest of the batch.
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
    id: int = field(default_factory=itertools.count().__next__)


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
        self.budget = impl.ThinkingBudgetState(
            tiny.start_token_ids, tiny.end_token_ids, max_num_reqs, max_spec_len=max(self.k, 1), device=self.device
        )
        self.waiting: queue.Queue[Request] = queue.Queue()
        self.slots: list[Request | None] = []
        self.wake = threading.Event()
        self.steps = 0
        self.thread = threading.Thread(target=self._loop, name="specconform-engine", daemon=True)
        self.thread.start()

    def submit(self, request: Request) -> Request:
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
        removed = [i for i, r in enumerate(self.slots) if r is not None and r.done.is_set()]
        live = [i for i, r in enumerate(self.slots) if r is not None and not r.done.is_set()]
        holes = sorted(removed)
        added = []
        slots = list(self.slots)
        for i in removed:
            slots[i] = None
        while len(live) + len(added) < self.max_num_reqs and not self.waiting.empty():
            request = self.waiting.get()
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
    def _logits(self, tokens: list[int]) -> torch.Tensor:
        ids = torch.tensor([tokens], device=self.device)
        return self.model(input_ids=ids).logits[0]

    def _draft(self, request: Request, context: list[int]) -> tuple[list[int], list[np.ndarray]]:
        """K draft tokens from the noisy target, and the distributions they were drawn from."""
        drafts, probs = [], []
        rng = np.random.default_rng([request.seed, len(context)])
        for _ in range(self.k):
            logits = self._logits(context + drafts)[-1].cpu().numpy()
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
            drafts.append(token)
            probs.append(q)
        return drafts, probs

    def _step(self) -> None:
        self._sync_batch()
        if not self.slots:
            return
        rows, drafts, num_drafts, probs, contexts = [], [], [], [], []
        for request in self.slots:
            context = request.prompt_token_ids + request.output
            slot_drafts, slot_probs = self._draft(request, context) if self.k else ([], [])
            logits = self._logits(context + slot_drafts)[len(context) - 1 :]
            rows.append(logits.float())
            drafts += slot_drafts
            probs += slot_probs
            num_drafts.append(len(slot_drafts))
            contexts.append(context)
        target = torch.cat(rows)
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
