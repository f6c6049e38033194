"""A rare-event mutant for ``specconform hunt`` (``--engine specconform.harness.adapters.zoo.rare:make``): the
reference engine that accepts a draft its target gives no mass when the draft row's acceptance coin is small.

It stands for SGLang's zero coin (issue 35771): coins drawn from ``[0, 1)`` compared as ``coin <= p / q`` accept a
``p = 0`` draft when the coin is exactly 0, once in about 2^24 draws. Here the coin only has to fall below
``COIN_THRESHOLD``, so that a hunt of ten thousand draws meets it. It is not among the zoo's ``MUTANTS``: those are
caught by the checks of a run, which are sized for distributions, not for events this rare.
"""

from __future__ import annotations

from ..reference import ReferenceEngine

COIN_THRESHOLD = 2.0**-8  # the acceptance coins below which a p = 0 draft is accepted


class ZeroCoinEngine(ReferenceEngine):
    """``ReferenceEngine`` whose free, sampled draft rows with ``p(d) = 0`` and a coin below ``COIN_THRESHOLD`` see
    the draft's logit lifted to the row's largest, so that the draft is accepted as if its target mass were not 0."""

    name = "zoo-rare:p-zero-accepted-on-small-coin"

    def rejection_sample_tensors(
        self,
        target_logits,
        draft_token_ids,
        num_draft_tokens,
        draft_probs,
        temperature,
        seeds,
        positions,
        forced_token_ids=None,
        **options,
    ):
        """The reference on ``target_logits [R, V]`` with the lifted cells (a copy); the other tensors as given."""
        from specconform.impl import rng

        torch = self.torch
        if seeds is not None and draft_token_ids.numel():
            k = num_draft_tokens.to(torch.int64)
            request = torch.repeat_interleave(torch.arange(k.shape[0], device=k.device), k + 1)
            row = torch.arange(request.shape[0], device=k.device)
            local = row - (torch.cumsum(k + 1, 0) - k - 1)[request]
            drafted = local < k[request]
            # request i's row r holds draft r - i (its rows follow the i bonus rows before it)
            draft_index = (row - request).clamp(0, draft_token_ids.shape[0] - 1)
            draft = torch.where(drafted, draft_token_ids[draft_index], 0).to(torch.int64)
            base = positions if positions is not None else torch.zeros_like(seeds)
            coin = rng.uniforms(seeds[request], base[request] + local)
            free = forced_token_ids < 0 if forced_token_ids is not None else torch.ones_like(drafted)
            lifted = drafted & free & (temperature[request] > 0) & (coin < COIN_THRESHOLD)
            at_draft = target_logits.gather(1, draft[:, None])[:, 0]
            lifted &= at_draft == float("-inf")
            # written without reading the mask back (no synchronisation): unlifted cells keep their value
            lifted_value = torch.where(lifted, target_logits.max(dim=1).values, at_draft)
            target_logits = target_logits.clone().scatter_(1, draft[:, None], lifted_value[:, None])
        return super().rejection_sample_tensors(
            target_logits,
            draft_token_ids,
            num_draft_tokens,
            draft_probs,
            temperature,
            seeds,
            positions,
            forced_token_ids,
            **options,
        )


def make(device: str = "cpu") -> ZeroCoinEngine:
    return ZeroCoinEngine(device)


def make_cuda() -> ZeroCoinEngine:
    return ZeroCoinEngine("cuda")
