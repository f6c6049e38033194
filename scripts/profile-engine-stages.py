"""Where the embedded engine's CPU time goes, by stage of its step, as its batch grows.

For each batch size B (default 4 and 32), B distinct greedy requests of the load benchmark's kind (the ``multi``
tokenizer, mixed thinking budgets, 24 tokens) are submitted at once to one engine in this process, ``--repeats``
times; each stage's time is the engine thread's own CPU time (``time.thread_time``, so other processes' load does not
count), summed over the wave; the medians over the repeats are printed. Stages: the forward passes, drafting, the
budget's forced rows, rejection sampling, the budget update, delivering the tokens, and the batch update.

    PYTHONPATH=$PWD python scripts/profile-engine-stages.py [--speculative-tokens 3] [--batch 4 32] [--repeats 5]
"""

from __future__ import annotations

import argparse
import collections
import functools
import statistics
import time

from transformers import AutoTokenizer

from specconform import impl
from specconform.embedded import engine as engine_module
from specconform.embedded import model as tiny_model

BUDGETS = (None, 0, 2, 5, 13)
STAGES = ("forward", "draft", "forced rows", "rejection", "budget update", "deliver", "batch update")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speculative-tokens", type=int, default=3)
    parser.add_argument("--batch", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tiny = tiny_model.build("multi")
    tokenizer = AutoTokenizer.from_pretrained(tiny.path)
    seconds: collections.Counter[str] = collections.Counter()  # engine-thread CPU seconds by stage, this wave

    def timed(stage, function):
        @functools.wraps(function)
        def wrapper(*arguments, **keywords):
            began = time.thread_time()
            try:
                return function(*arguments, **keywords)
            finally:
                seconds[stage] += time.thread_time() - began

        return wrapper

    engine_module.forward = timed("forward", engine_module.forward)
    impl.rejection_sample = timed("rejection", impl.rejection_sample)
    budget_state = impl.ThinkingBudgetState
    budget_state.forced_tokens = timed("forced rows", budget_state.forced_tokens)
    budget_state.update_state = timed("budget update", budget_state.update_state)
    engine_class = engine_module.Engine
    engine_class._draft = timed("draft", engine_class._draft)
    engine_class._deliver = timed("deliver", engine_class._deliver)
    engine_class._sync_batch = timed("batch update", engine_class._sync_batch)
    engine_class._step = timed("step", engine_class._step)
    engine = engine_class(tiny, num_speculative_tokens=args.speculative_tokens)

    def prompt(i: int) -> list[int]:
        messages = [{"role": "user", "content": f"check the sum {i} then the final value"}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return tokenizer.encode(text, add_special_tokens=False)

    def wave(size: int) -> dict[str, float]:
        seconds.clear()
        steps = engine.steps
        requests = [engine_module.Request(prompt(i), 24, 0.0, 1, BUDGETS[i % 5]) for i in range(size)]
        for request in requests:
            engine.submit(request)
        for request in requests:
            request.done.wait()
        return {**seconds, "steps": engine.steps - steps}

    wave(2)  # warm
    waves = collections.defaultdict(list)
    for _ in range(args.repeats):
        for size in args.batch:
            waves[size].append(wave(size))
    for size in args.batch:
        median = {key: statistics.median(w.get(key, 0) for w in waves[size]) for key in ("step", "steps", *STAGES)}
        stages = ", ".join(f"{stage} {median[stage] * 1e3:.0f}" for stage in STAGES)
        print(
            f"K = {args.speculative_tokens}, B = {size}: {median['step'] * 1e3:.0f} ms of engine CPU in "
            f"{median['steps']:.0f} steps ({median['step'] / median['steps'] * 1e3:.2f} ms a step); by stage, ms: "
            f"{stages} (medians of {args.repeats})"
        )


if __name__ == "__main__":
    main()
