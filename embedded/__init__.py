"""The embedded reference engine (``specconform serve``), the default engine the harness judges.

Models served, per tokenizer variant ``v`` (``single``, ``multi``):

- ``tiny-think-v``: reasoning markers, no speculation;
- ``tiny-think-v-spec``: the same model with speculative decoding (``K`` drafts per step);
- ``tiny-plain-v``: the same model without reasoning markers (a budget there is a 400).
"""

from __future__ import annotations

if __name__ != "specconform.embedded":  # a checkout's root on the path makes the folder importable by its own name
    raise ModuleNotFoundError(
        f"{__name__!r} is the folder of 'specconform.embedded', importable under that name only (docs/install.md)",
        name=__name__,
    )

import functools
import threading
import time
from dataclasses import dataclass

DEFAULT_VARIANTS = ("single", "multi")


@dataclass
class RunningServer:
    base_url: str
    server: object
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def build_app(
    variants=DEFAULT_VARIANTS,
    num_speculative_tokens: int = 3,
    device: str = "cpu",
    reasoning_fields: tuple[str, ...] = ("reasoning", "reasoning_content"),
    engine_processes: bool = False,
    engine_threads: int = 1,
    engine_replicas: int = 1,
):
    """The server's app. With ``engine_processes`` each engine runs in a process of its own
    (``process.EngineProcess``), so that the engines and the server's event loop do not share one interpreter
    lock; without, in a thread of this process, where tests can reach into it. ``engine_threads``: the intra-op
    threads of each engine's step loop; ``engine_replicas``: the processes of each engine (``process.EngineReplicas``;
    more than one only with ``engine_processes``)."""
    from transformers import AutoTokenizer

    from . import model as tiny_model
    from .app import create_app
    from .engine import Engine
    from .process import EngineProcess, EngineReplicas
    from .served import ServedModel

    if engine_replicas != 1 and not engine_processes:
        raise ValueError(f"engine_replicas = {engine_replicas!r} needs engine_processes (replicas are processes)")
    served, engines = {}, []
    for variant in variants:
        tiny = tiny_model.build(variant)
        tokenizer = AutoTokenizer.from_pretrained(tiny.path)
        if not engine_processes:
            make = Engine
        elif engine_replicas == 1:
            make = EngineProcess
        else:
            make = functools.partial(EngineReplicas, count=engine_replicas)
        plain = make(tiny, device=device, threads=engine_threads)
        spec = make(tiny, num_speculative_tokens=num_speculative_tokens, device=device, threads=engine_threads)
        engines += [plain, spec]
        served[f"tiny-think-{variant}"] = ServedModel(f"tiny-think-{variant}", plain, tokenizer, True)
        served[f"tiny-think-{variant}-spec"] = ServedModel(f"tiny-think-{variant}-spec", spec, tokenizer, True)
        served[f"tiny-plain-{variant}"] = ServedModel(f"tiny-plain-{variant}", plain, tokenizer, False)
    if engine_processes:  # the processes load their models at the same time
        for engine in engines:
            engine.wait_ready()
    return create_app(served, reasoning_fields)


def start(host: str = "127.0.0.1", port: int = 0, **kwargs) -> RunningServer:
    """Start the server in a background thread; ``port=0`` picks a free port."""
    import uvicorn

    app = build_app(**kwargs)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, name="specconform-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the embedded engine did not start on {host}:{port}")
        time.sleep(0.05)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return RunningServer(f"http://{host}:{bound}/v1", server, thread)
