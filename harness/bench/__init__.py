"""GPU benchmarks of the reference implementation, side by side in one process.

Times are medians of CUDA-event timings (``triton.testing.do_bench``, which flushes L2 between
runs). Ours and vLLM Model Runner V2's kernels are timed both as CUDA-graph replays and eagerly, and
compared graph against graph and eager against eager; the other peers run eagerly. The read-once
floor of a shape is measured, not computed: the graph-replay time of a plain reduction kernel reading,
once and at their dtypes, the rows the output depends on (``read_floors``: no correct sampler reads
less), beside the one-pass floor that also reads the rows after a rejection, as a sampler that reads
every row in one parallel pass must. The environment records the device-to-device copy bandwidth
(bytes read plus bytes written) for reference. Results go to
``reports/perf/<gpu>/bench-<time>.json``.

Peers are timed in the same process on the same inputs when importable: vLLM's legacy
``rejection_sample`` (given the draft rows already gathered and the bonus tokens already sampled, so
it does less work than ours), Model Runner V2's ``rejection_sample`` (vLLM's default; on its own
layout, given the draft logits that our ``draft_probs`` are the softmax of, or none for one-hot
drafts) and its budget kernel ``apply_thinking_budget``, and FlashInfer's
``chain_speculative_sampling`` (softmax of the target logits included, as it takes probabilities; it
has no greedy mode and needs draft probabilities). A peer that cannot be imported is reported with
the reason, never skipped silently. Each shape is timed ``REPEATS`` times, interleaved across
implementations; the median of the repeats is reported with the spread (largest / smallest repeat).

By concern: how a function is timed (``timing``), what is timed (``shapes``), the peers beside ours (``peers``),
the run of every family (``runs``) and how a run is shown (``render``). ``python -m specconform.harness.bench
[OUT_DIR]`` runs it, as ``specconform bench`` does.
"""

from .runs import main

__all__ = ["main"]
