"""Speculative-decoding rejection sampling with fused accepted-token counting.

``rejection_sample`` implements specs/rejection-sampling.md on the canonical ragged layout. On a
GPU (and on CPU tensors under ``TRITON_INTERPRET=1`` with ``backend="triton"``) it launches three
Triton kernels, two of them parallel over the vocabulary (see ``impl/kernels/rejection.py``); on a CPU
it runs a vectorised PyTorch path with the same semantics and the same counter-based draws
(``specconform.impl.rng``), so GPU, CPU and the oracle agree token for token except within ~1e-6 of a
floating-point decision boundary.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from specconform.specs.interface import PLACEHOLDER

from . import rng
from .kernels import HAS_TRITON
from .validation import describe, require_int, require_tensor


@dataclass
class RejectionOutput:
    """``token_ids [B, max K_i + 1]`` int32, -1 padded; ``num_emitted [B]`` int32 (AC-COUNT-5)."""

    token_ids: torch.Tensor
    num_emitted: torch.Tensor


def _validate(
    target_logits,
    draft_token_ids,
    num_draft_tokens,
    draft_probs,
    temperature,
    seeds,
    positions,
    forced_token_ids,
    check_values: bool,
):
    """Raise ValueError naming the field (RS-INPUT-3..5); types, dtypes, devices and shapes always, values if
    ``check_values``."""
    require_tensor("target_logits", target_logits, "floating")
    device = target_logits.device
    require_tensor("draft_token_ids", draft_token_ids, "integer", device)
    require_tensor("num_draft_tokens", num_draft_tokens, "integer", device)
    for name, tensor, kind in (
        ("draft_probs", draft_probs, "floating"),
        ("temperature", temperature, "floating"),
        ("seeds", seeds, "integer"),
        ("positions", positions, "integer"),
        ("forced_token_ids", forced_token_ids, "integer"),
    ):
        if tensor is not None:
            require_tensor(name, tensor, kind, device)
    if target_logits.dim() != 2:
        raise ValueError(f"target_logits must be 2-D [sum(K_i + 1), V]; got shape {tuple(target_logits.shape)}")
    rows, vocab = target_logits.shape
    if num_draft_tokens.dim() != 1:
        raise ValueError(f"num_draft_tokens must be 1-D [B]; got shape {tuple(num_draft_tokens.shape)}")
    batch = num_draft_tokens.shape[0]
    if draft_token_ids.dim() != 1:
        raise ValueError(f"draft_token_ids must be 1-D [sum(K_i)]; got shape {tuple(draft_token_ids.shape)}")
    num_drafts = draft_token_ids.shape[0]
    if rows != num_drafts + batch:
        raise ValueError(
            f"target_logits has {rows} rows; draft_token_ids and num_draft_tokens imply {num_drafts + batch}"
        )
    if draft_probs is not None and tuple(draft_probs.shape) != (num_drafts, vocab):
        raise ValueError(f"draft_probs must have shape ({num_drafts}, {vocab}); got {tuple(draft_probs.shape)}")
    for name, tensor in (("temperature", temperature), ("seeds", seeds), ("positions", positions)):
        if tensor is not None and tuple(tensor.shape) != (batch,):
            raise ValueError(f"{name} must have shape ({batch},); got {tuple(tensor.shape)}")
    if forced_token_ids is not None and tuple(forced_token_ids.shape) != (rows,):
        raise ValueError(f"forced_token_ids must have shape ({rows},); got {tuple(forced_token_ids.shape)}")
    if not check_values:
        return
    if (num_draft_tokens < 0).any():
        raise ValueError(f"num_draft_tokens must be >= 0; got {num_draft_tokens.tolist()}")
    if int(num_draft_tokens.sum()) != num_drafts:
        raise ValueError(f"num_draft_tokens sums to {int(num_draft_tokens.sum())}; draft_token_ids has {num_drafts}")
    bad = (draft_token_ids < 0) | (draft_token_ids >= vocab)
    if bad.any():
        raise ValueError(f"draft_token_ids must lie in [0, {vocab}); got {draft_token_ids[bad].tolist()[:8]}")
    if temperature is not None and (~torch.isfinite(temperature) | (temperature < 0)).any():
        raise ValueError(f"temperature must be finite and >= 0; got {temperature.tolist()[:8]}")
    free = torch.ones(rows, dtype=torch.bool, device=target_logits.device)
    if forced_token_ids is not None:
        bad = (forced_token_ids < -1) | (forced_token_ids >= vocab)
        if bad.any():
            raise ValueError(
                f"forced_token_ids must be -1 or in [0, {vocab}); got {forced_token_ids[bad].tolist()[:8]}"
            )
        free = forced_token_ids == -1
    for problem, mask in (
        ("NaN", torch.isnan(target_logits).any(dim=1)),
        ("+inf", torch.isposinf(target_logits).any(dim=1)),
        ("no finite logit", ~torch.isfinite(target_logits).any(dim=1)),
    ):
        bad = mask & free
        if bad.any():
            raise ValueError(f"target_logits row {int(bad.nonzero()[0])} has {problem}")
    if draft_probs is not None:
        if (~torch.isfinite(draft_probs) | (draft_probs < 0)).any():
            raise ValueError("draft_probs must be finite and >= 0")
        sums = draft_probs.double().sum(dim=1)
        bad = (sums - 1.0).abs() > 1e-3
        if bad.any():
            row = int(bad.nonzero()[0])
            raise ValueError(f"draft_probs row {row} sums to {float(sums[row])}; rows must sum to 1 within 1e-3")


def _validate_seeded(seeded, seeds) -> None:
    """Raise ValueError naming ``seeded`` unless it is a ``bool`` tensor shaped and placed like ``seeds``."""
    if seeds is None:
        raise ValueError(f"seeded marks entries of seeds, but seeds is None; got seeded {describe(seeded)}")
    require_tensor("seeded", seeded, "bool", seeds.device)
    if tuple(seeded.shape) != tuple(seeds.shape):
        raise ValueError(f"seeded must have shape {tuple(seeds.shape)} (that of seeds); got {tuple(seeded.shape)}")


def rejection_sample(
    target_logits: torch.Tensor,
    draft_token_ids: torch.Tensor,
    num_draft_tokens: torch.Tensor,
    *,
    draft_probs: torch.Tensor | None = None,
    temperature: torch.Tensor | None = None,
    seeds: torch.Tensor | None = None,
    positions: torch.Tensor | None = None,
    forced_token_ids: torch.Tensor | None = None,
    max_spec_len: int | None = None,
    validate: bool = True,
    backend: str = "auto",
    seeded: torch.Tensor | None = None,
) -> RejectionOutput:
    """Verify drafts and emit tokens (RS-*), counting them as it goes (AC-COUNT-5).

    - ``target_logits``: ``[sum(K_i + 1), V]`` fp32/bf16/fp16; request ``i`` owns ``K_i`` draft rows
      then its bonus row.
    - ``draft_token_ids``: ``[sum(K_i)]`` int. ``num_draft_tokens``: ``[B]`` int, zeros allowed.
    - ``draft_probs``: ``[sum(K_i), V]`` float, or None (drafts are one-hot).
    - ``temperature``: ``[B]`` float, 0 = greedy; None = all greedy.
    - ``seeds``: ``[B]`` int64; None draws fresh seeds from torch's generator (unseeded requests).
    - ``seeded``: ``[B]`` bool beside ``seeds``, False where a request has no seed and draws a fresh one from
      torch's generator like an unseeded request (a mixed batch, specs/rejection-sampling.md section 6); None:
      every request of ``seeds`` has its seed.
    - ``positions``: ``[B]`` int64 sequence position of each request's first new token (default 0);
      with the seed it keys the draws (RS-RNG-1).
    - ``forced_token_ids``: ``[sum(K_i + 1)]`` int, -1 where free (from the thinking budget).
    - ``max_spec_len``: an upper bound on ``K_i``; the output then has ``max_spec_len + 1`` columns
      and nothing is read back to the host. Without it the width is ``max K_i + 1``, read from
      ``num_draft_tokens`` (a synchronisation on a GPU).
    - ``validate``: check values too (RS-INPUT-3..5; reads the inputs once more and synchronises).
      With ``validate=False`` only types, dtypes and shapes are checked, and every emitted id still lies in
      ``[0, V)`` (RS-INPUT-6): a draft id outside ``[0, V)`` is a token the target cannot emit, so it is
      never accepted and its row is resampled as after any rejection; a forced id outside ``[0, V)`` forces
      nothing (the row is free). The layout (``num_draft_tokens`` >= 0, summing to the draft rows) stays the
      caller's contract there.
    """
    if not isinstance(validate, bool):
        raise ValueError(f"validate must be True or False; got {validate!r}")
    if max_spec_len is not None:
        require_int("max_spec_len", max_spec_len, 0)
    _validate(
        target_logits,
        draft_token_ids,
        num_draft_tokens,
        draft_probs,
        temperature,
        seeds,
        positions,
        forced_token_ids,
        validate,
    )
    device = target_logits.device
    batch = num_draft_tokens.shape[0]
    if not validate and forced_token_ids is not None:
        in_vocab = (forced_token_ids >= 0) & (forced_token_ids < target_logits.shape[1])
        forced_token_ids = torch.where(in_vocab, forced_token_ids, -1)
    if temperature is None:
        temperature = torch.zeros(batch, dtype=torch.float32, device=device)
    if seeded is not None:
        _validate_seeded(seeded, seeds)
    if seeds is None:
        seeds = torch.randint(0, 2**62, (batch,), dtype=torch.int64, device=device)
    elif seeded is not None:
        fresh = torch.randint(0, 2**62, (batch,), dtype=torch.int64, device=device)
        seeds = torch.where(seeded, seeds, fresh)
    if positions is None:
        positions = torch.zeros(batch, dtype=torch.int64, device=device)
    if max_spec_len is not None:
        if validate and batch and int(num_draft_tokens.max()) > max_spec_len:
            raise ValueError(f"num_draft_tokens exceeds max_spec_len={max_spec_len}")
        width = max_spec_len + 1
    else:
        width = int(num_draft_tokens.max()) + 1 if batch else 1
    if backend == "auto":
        backend = "triton" if device.type == "cuda" and HAS_TRITON else "torch"
    if backend == "triton":
        if not HAS_TRITON:
            raise ValueError("backend='triton' needs the triton package (pip install triton)")
        return _rejection_triton(
            target_logits,
            draft_token_ids,
            num_draft_tokens,
            draft_probs,
            temperature,
            seeds,
            positions,
            forced_token_ids,
            width,
        )
    if backend != "torch":
        raise ValueError(f"backend must be auto, torch or triton; got {backend!r}")
    return _rejection_torch(
        target_logits,
        draft_token_ids,
        num_draft_tokens,
        draft_probs,
        temperature,
        seeds,
        positions,
        forced_token_ids,
        width,
    )


# Launch shapes of the Triton path, measured on an H100 (reports/perf/): rows that fill the device on
# their own get one program each (wide blocks, 8 warps); fewer rows are cut into vocabulary splits of
# narrow blocks (4 warps), many programs per SM, so that enough loads are in flight.
PROGRAMS_PER_SM = 64
# The row pass cuts the rows of one draft index (one level, B rows) into enough programs to fill the
# device more than once: the GPU starts programs roughly in order of their index, so a level's programs
# then start mostly as programs of the level before finish, and a row after a rejection judged by then
# is skipped (what is emitted does not depend on the order). 32 was the fastest of 16, 32 and 64 at most
# of the bench's shapes on an H100 (scripts/profile-kernels.py --level-programs).
LEVEL_PROGRAMS_PER_SM = 32
WIDE_WARPS = 8
NARROW_WARPS = 4
# Narrow blocks of the row pass are half the wide block, those of the residual race a quarter (the
# fastest of the two in one run at the bench's shapes, scripts/profile-kernels.py).
ROW_PASS_NARROWING = 2
RACE_NARROWING = 4
# Few or small rows cut into LEVEL_PROGRAMS_PER_SM programs per SM make programs that read a few KB each
# and pay each program's fixed cost: a split of the row pass reads at least ROW_SPLIT_MIN_IDS ids where the B
# rows of a level still give FILL_PROGRAMS_PER_SM programs per SM (0: no minimum). On an H100, 4096 was faster than
# none at the shapes with small or few rows (V = 32,000, B = 8, B = 64) and the same elsewhere; 8192 and 16384
# gained less or lost, and a minimum for the verify kernel's splits lost
# (reports/perf/NVIDIA-H100-80GB-HBM3/split-min-ids-20261122-1801.txt; docs/kernels.md).
ROW_SPLIT_MIN_IDS = 4096
FILL_PROGRAMS_PER_SM = 8


def _target_programs(device: torch.device, per_sm: int) -> int:
    """Programs per launch that keep the device busy: ``per_sm`` per SM on a GPU, one on the CPU."""
    if device.type != "cuda":
        return 1
    index = device.index if device.index is not None else torch.cuda.current_device()
    return per_sm * _multi_processors(index)


@functools.cache
def _multi_processors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _split_programs(device: torch.device, per_sm: int, rows: int, vocab_size: int, min_ids: int) -> int:
    """The target of programs for ``rows`` rows: ``per_sm`` per SM, fewer where a split would read fewer
    than ``min_ids`` ids, but not fewer than ``FILL_PROGRAMS_PER_SM`` per SM (one on the CPU)."""
    programs = _target_programs(device, per_sm)
    if not min_ids or device.type != "cuda":
        return programs
    return max(_target_programs(device, FILL_PROGRAMS_PER_SM), min(programs, rows * _cdiv(vocab_size, min_ids)))


def _launch_shape(vocab_size: int, rows: int, programs: int, narrowing: int) -> tuple[int, int, int, int]:
    """``(block, num_warps, num_splits, split_size)`` for ``rows`` rows and a target of ``programs``
    programs: one program per row where the rows fill half the target, else vocabulary splits of
    blocks ``narrowing`` times narrower so that ``rows * num_splits`` programs reach the target;
    ``split_size`` is a multiple of ``block``."""
    block = _block_size(vocab_size)
    if 2 * rows >= programs:
        return block, WIDE_WARPS, 1, _cdiv(vocab_size, block) * block
    block = max(16, block // narrowing)
    wanted = max(1, min(_cdiv(programs, max(rows, 1)), _cdiv(vocab_size, block)))
    split_size = _cdiv(_cdiv(vocab_size, wanted), block) * block
    return block, NARROW_WARPS, _cdiv(vocab_size, split_size), split_size


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class _TritonPlan:
    """The launches of one launch key (``_plan``): scratch sizes and the kernels' launches."""

    floats: int
    ints: int
    setup: object
    row_pass: object
    verify: object
    setup_ints: tuple[int, ...]
    row_pass_ints: tuple[int, ...]
    verify_ints: tuple[int, ...]


_PLANS: dict[tuple, _TritonPlan] = {}
MAX_PLANS = 1024  # launch keys kept; an engine sees a few batch sizes and widths


def _plan(key: tuple, vocab: int, batch: int, width: int, has_q: bool, has_forced: bool, device) -> _TritonPlan:
    """The plan of a launch key, made on first use: launch shapes, scratch sizes, compiled launches."""
    from .kernels import rejection as kernels
    from .kernels.launch import CompiledLaunch

    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    rows = batch * width
    stat_block, stat_warps, stat_splits, stat_split_size = _launch_shape(
        vocab,
        batch,
        _split_programs(device, LEVEL_PROGRAMS_PER_SM, batch, vocab, ROW_SPLIT_MIN_IDS),
        ROW_PASS_NARROWING,
    )
    race_block, race_warps, race_splits, race_split_size = _launch_shape(
        vocab, batch, _target_programs(device, PROGRAMS_PER_SM), RACE_NARROWING
    )
    stat_size = rows * stat_splits
    race_size = batch * race_splits  # the best score of each split
    plan = _TritonPlan(
        # the scratch of kernels.rejection._scratch
        floats=2 * stat_size + 2 * rows + race_size,
        ints=3 * rows + 4 * batch + stat_size + race_size,
        setup=CompiledLaunch(
            kernels.setup_kernel, (1,), NARROW_WARPS, BLOCK=min(1024, max(triton_next_pow2(rows), 16))
        ),
        row_pass=CompiledLaunch(
            kernels.row_pass_kernel,
            (rows * stat_splits,),
            stat_warps,
            HAS_Q=has_q,
            HAS_FORCED=has_forced,
            SPLITS_POW2=max(triton_next_pow2(stat_splits), 2),
            BLOCK=stat_block,
        ),
        verify=CompiledLaunch(
            kernels.verify_kernel,
            (batch * race_splits,),
            race_warps,
            HAS_Q=has_q,
            HAS_FORCED=has_forced,
            WIDTH_POW2=max(triton_next_pow2(width), 2),
            SPLITS_POW2=max(triton_next_pow2(race_splits), 2),
            BLOCK=race_block,
        ),
        setup_ints=(batch, width, stat_splits),
        row_pass_ints=(vocab, stat_split_size, batch, width, stat_splits),
        verify_ints=(vocab, race_split_size, batch, width, stat_splits, race_splits),
    )
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _rejection_triton(logits, drafts, num_draft, draft_probs, temperature, seeds, positions, forced, width):
    """The three launches of ``impl/kernels/rejection.py`` through compiled handles cached per launch
    key; no host work that grows with the batch."""
    device = logits.device
    batch, vocab = num_draft.shape[0], logits.shape[1]
    if batch == 0:
        empty = torch.empty((0, width), dtype=torch.int32, device=device)
        return RejectionOutput(empty, empty[:, 0])
    logits = logits.contiguous()
    drafts = drafts if drafts.numel() else num_draft  # a placeholder: no draft is ever read
    q = draft_probs.contiguous() if draft_probs is not None else logits
    forced_arg = forced if forced is not None else num_draft  # a placeholder when nothing is forced
    tensors = (logits, drafts, q, num_draft, temperature, seeds, positions, forced_arg)
    # what the JIT specialises on: every integer (batch, width, vocab and what follows from them),
    # every tensor's dtype and 16-byte alignment, the device
    key = (
        device,
        vocab,
        batch,
        width,
        draft_probs is not None,
        forced is not None,
        *[(t.dtype, t.data_ptr() % 16 == 0) for t in tensors],
    )
    plan = _plan(key, vocab, batch, width, draft_probs is not None, forced is not None, device)
    # one allocation of each dtype (host time counts at small batches): ``ints`` begins with the
    # output [B, width] and num_emitted [B]
    floats = torch.empty(plan.floats, dtype=torch.float32, device=device)
    ints = torch.empty(plan.ints, dtype=torch.int32, device=device)
    plan.setup(num_draft, floats, ints, *plan.setup_ints)
    plan.row_pass(*tensors, floats, ints, *plan.row_pass_ints)
    plan.verify(*tensors, floats, ints, *plan.verify_ints)
    return RejectionOutput(ints.as_strided((batch, width), (width, 1)), ints.narrow(0, batch * width, batch))


def triton_next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _block_size(vocab_size: int) -> int:
    """The wide block (one program per row); narrow blocks are a fraction of it (``_launch_shape``)."""
    return min(2048, max(triton_next_pow2(vocab_size), 16))


def _rejection_torch(logits, drafts, num_draft, draft_probs, temperature, seeds, positions, forced, width):
    """The vectorised PyTorch path: same decisions and draws as the kernel."""
    device = logits.device
    batch, vocab = num_draft.shape[0], logits.shape[1]
    k = num_draft.to(torch.int64)
    row0 = torch.cumsum(k + 1, 0) - k - 1
    request_of_row = torch.repeat_interleave(torch.arange(batch, device=device), k + 1)
    j_of_row = torch.arange(logits.shape[0], device=device) - row0[request_of_row]
    temp_row = temperature.to(torch.float32)[request_of_row]
    greedy_row = temp_row == 0
    x = logits.to(torch.float32) / torch.where(greedy_row, 1.0, temp_row)[:, None]
    p = torch.softmax(x, dim=1)
    forced = forced.to(torch.int64) if forced is not None else torch.full_like(request_of_row, -1)
    is_draft_row = j_of_row < k[request_of_row]
    draft_index = (row0[request_of_row] - request_of_row + j_of_row).clamp(max=max(drafts.shape[0] - 1, 0))
    draft_row = drafts.to(torch.int64)[draft_index] if drafts.numel() else torch.zeros_like(request_of_row)
    draft_in_vocab = (draft_row >= 0) & (draft_row < vocab)  # only without validation can this be false
    draft_row = torch.where(draft_in_vocab, draft_row, 0)
    q_draft = (
        draft_probs.to(torch.float32)[draft_index, draft_row]
        if draft_probs is not None and drafts.numel()
        else torch.ones_like(temp_row)
    )
    argmax = torch.argmax(x, dim=1)  # first maximum: ties to the lowest id
    u = rng.uniforms(seeds[request_of_row], positions[request_of_row] + j_of_row)
    p_draft = p.gather(1, draft_row[:, None])[:, 0]
    accept = (
        torch.where(
            forced >= 0,
            (draft_row == forced) & (greedy_row | (q_draft > 0)),
            torch.where(greedy_row, argmax == draft_row, (q_draft > 0) & (u * q_draft < p_draft)),
        )
        & is_draft_row
        & draft_in_vocab
    )
    # Accepted prefix length per request: the first non-accepted draft row.
    rejected_j = torch.where(is_draft_row & ~accept, j_of_row, k[request_of_row])
    accepted = torch.full((batch,), 0, dtype=torch.int64, device=device).scatter_reduce(
        0, request_of_row, rejected_j, reduce="amin", include_self=False
    )
    final_row = row0 + accepted
    bonus = accepted == k
    greedy = temperature == 0
    fx = x[final_row]
    fp = p[final_row]
    noise = rng.exponentials(seeds, positions + accepted, vocab)
    if draft_probs is not None and drafts.numel():
        q_final = draft_probs.to(torch.float32)[
            (row0 - torch.arange(batch, device=device) + accepted).clamp(max=drafts.shape[0] - 1)
        ]
    else:
        q_final = torch.nn.functional.one_hot(draft_row[final_row], vocab) * draft_in_vocab[final_row, None]
        q_final = q_final.to(torch.float32)
    residual = (fp - q_final).clamp(min=0)
    residual_token = torch.argmax(residual / noise, dim=1)
    has_mass = (residual > 0).any(dim=1)
    residual_token = torch.where(has_mass, residual_token, torch.argmax(fp / noise, dim=1))
    bonus_score = torch.where(fx == float("-inf"), float("-inf"), fx - torch.log(noise))
    sampled = torch.where(bonus, torch.argmax(bonus_score, dim=1), residual_token)
    final = torch.where(greedy, argmax[final_row], sampled)
    final = torch.where(forced[final_row] >= 0, forced[final_row], final)
    # Assemble rows: accepted drafts, then the final token, then -1.
    columns = torch.arange(width, device=device)
    draft_grid_index = (row0 - torch.arange(batch, device=device))[:, None] + columns[None, :]
    draft_grid = (
        drafts.to(torch.int64)[draft_grid_index.clamp(0, max(drafts.shape[0] - 1, 0))]
        if drafts.numel()
        else torch.zeros((batch, width), dtype=torch.int64, device=device)
    )
    out = torch.where(columns[None, :] < accepted[:, None], draft_grid, PLACEHOLDER)
    out = torch.where(columns[None, :] == accepted[:, None], final[:, None], out)
    return RejectionOutput(out.to(torch.int32), (accepted + 1).to(torch.int32))
