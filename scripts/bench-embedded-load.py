"""Load benchmark of the embedded engine: how continuous batching scales with concurrent clients.

Starts the embedded server in its own process (``specconform serve``), then for each client count N
(default 8, 32 and 64) sends N distinct greedy requests at once (mixed thinking budgets, half streamed, half
not, alternating the plain and the speculative model) and reports the wall time of the whole wave, the server's
CPU time during it (user + system, all threads of its process and of its engine processes; from Linux's
``/proc``), the load generator's own CPU time and the latency percentiles. Every response is then compared with
the same request run alone: a difference means a crossed or batch-dependent response, and the script exits
non-zero. Waves of different sizes
alternate against the same server, ``--repeats`` times; each size reports the median wave and the spread
(slowest / fastest), so their times compare like with like on the same machine.

The clients are coroutines sharing one asynchronous HTTP client (a connection per request) in this process, not
the server's: the server's CPU time is its own, and the clients' is reported beside it, since on a machine of few
cores they share the cores with the server.

``--baseline DIR`` also starts the server of another checkout (``DIR``, e.g. a worktree of ``main``) and sends
every wave to each server in turn, so that both are measured side by side under the same load; the baseline's
responses must equal this checkout's.

    PYTHONPATH=$PWD python scripts/bench-embedded-load.py [--clients 8 32 64] [--max-tokens 24] [--repeats 3]
        [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BUDGETS = (None, 0, 2, 5, 13)
MODELS = ("tiny-think-multi", "tiny-think-multi-spec")


@dataclass
class Server:
    """One embedded server under test: its name, process, base URL and the waves measured against it."""

    name: str
    process: subprocess.Popen
    base_url: str
    waves: dict[int, list[tuple[float, float, float, list]]] = field(default_factory=dict)  # wall, server, client CPU
    alone: list = field(default_factory=list)


def body(i: int, max_tokens: int) -> dict:
    request = {
        "model": MODELS[i % 2],
        "messages": [{"role": "user", "content": f"check the sum {i} then the final value"}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "return_token_ids": True,
        "stream": i % 4 >= 2,
    }
    if BUDGETS[i % len(BUDGETS)] is not None:
        request["thinking_token_budget"] = BUDGETS[i % len(BUDGETS)]
    return request


async def ask(client: httpx.AsyncClient, base_url: str, request: dict) -> tuple[list[int], str, float]:
    """``(token ids, finish reason, latency in seconds)`` of one request, streamed or not."""
    began = time.perf_counter()
    if not request["stream"]:
        response = await client.post(f"{base_url}/chat/completions", json=request)
        response.raise_for_status()
        choice = response.json()["choices"][0]
        return choice["token_ids"], choice["finish_reason"], time.perf_counter() - began
    ids, finish = [], None
    async with client.stream("POST", f"{base_url}/chat/completions", json=request) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[len("data: ") :])["choices"][0]
            ids += choice.get("token_ids", [])
            finish = choice["finish_reason"] or finish
    return ids, finish, time.perf_counter() - began


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` and its descendants (the engine processes) have used so far,
    all their threads together (Linux ``/proc``)."""
    total, children = 0.0, []
    with contextlib.suppress(FileNotFoundError):  # a process that ended meanwhile counts no more
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()  # the fields after the command name
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += (task / "children").read_text().split()
    return total + sum(cpu_seconds(int(child)) for child in children)


async def wave(client: httpx.AsyncClient, server: Server, clients: int, max_tokens: int) -> None:
    """Send ``clients`` requests at once to ``server``; record ``(wall s, server CPU s, client CPU s, results)``."""
    requests = [body(i, max_tokens) for i in range(clients)]
    server_before, client_before = cpu_seconds(server.process.pid), time.process_time()
    began = time.perf_counter()
    results = await asyncio.gather(*(ask(client, server.base_url, r) for r in requests))
    wall = time.perf_counter() - began
    server_cpu, client_cpu = cpu_seconds(server.process.pid) - server_before, time.process_time() - client_before
    server.waves.setdefault(clients, []).append((wall, server_cpu, client_cpu, list(results)))


async def measure(servers: list[Server], args) -> None:
    """Waves of every size, ``args.repeats`` times, each sent to every server in turn; then each request alone."""
    # A fresh connection per request: one kept alive past the server's keep-alive timeout may be closed under it.
    limits = httpx.Limits(max_connections=max(args.clients), max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        for server in servers:
            await ask(client, server.base_url, body(0, 2))  # warm up both paths
            await ask(client, server.base_url, body(3, 2))
        for repeat in range(args.repeats):
            for n in args.clients:
                for server in servers if repeat % 2 == 0 else servers[::-1]:  # neither server always goes first
                    await wave(client, server, n, args.max_tokens)
        for server in servers:
            server.alone = [
                await ask(client, server.base_url, body(i, args.max_tokens)) for i in range(max(args.clients))
            ]


def start_server(name: str, checkout: Path) -> Server:
    """Start ``specconform serve`` of ``checkout`` on a free loopback port and wait until it answers."""
    with socket.socket() as probe:  # a free loopback port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    search_path = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    environment = {**os.environ, "PYTHONPATH": search_path}  # the checkout's code first
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--port", str(port)], cwd=checkout, env=environment
    )
    deadline = time.monotonic() + 300
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health").raise_for_status()
            return Server(name, process, f"http://127.0.0.1:{port}/v1")
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the embedded server of {checkout} did not start") from None
            time.sleep(0.5)


def report(server: Server, args, reference: list) -> tuple[int, dict[int, float], dict[int, float]]:
    """Print ``server`` 's waves; returns how many responses differ from ``reference`` (the solo runs), and the
    median wall and server CPU seconds per client count."""
    differing, walls_median, cpus_median = 0, {}, {}
    for n, runs in server.waves.items():
        walls, cpus, client_cpus = (sorted(run[column] for run in runs) for column in range(3))
        walls_median[n], cpus_median[n] = statistics.median(walls), statistics.median(cpus)
        latencies = sorted(latency for *_, results in runs for *_, latency in results)
        mismatched = sorted({i for *_, results in runs for i, r in enumerate(results) if r[:2] != reference[i][:2]})
        differing += len(mismatched)
        tokens = sum(len(r[0]) for r in runs[0][3])
        print(
            f"{server.name}: {n:3d} clients: median {walls_median[n]:6.2f} s wall (spread {walls[-1] / walls[0]:.2f}x "
            f"over {len(walls)}), server CPU {cpus_median[n]:.2f} s (spread {cpus[-1] / cpus[0]:.2f}x), client CPU "
            f"{statistics.median(client_cpus):.2f} s, {tokens / walls_median[n]:6.1f} tokens/s, latency p50 "
            f"{statistics.median(latencies):.2f} s, p95 {statistics.quantiles(latencies, n=20)[-1]:.2f} s, max "
            f"{latencies[-1]:.2f} s; {len(mismatched)} differ from their solo run {mismatched[:8]}"
        )
    solo = sum(r[2] for r in server.alone)
    print(f"{server.name}: {len(server.alone)} requests one at a time: {solo:.2f} s")
    first = min(args.clients)
    for n in sorted(args.clients)[1:]:
        print(
            f"{server.name}: {n} clients take {walls_median[n] / walls_median[first]:.2f}x the wall time and "
            f"{cpus_median[n] / cpus_median[first]:.2f}x the server CPU time of {first} (medians)"
        )
    return differing, walls_median, cpus_median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a checkout whose server is measured side by side with this one")
    args = parser.parse_args()
    checkouts = [("this", Path.cwd())] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    servers = []
    try:
        for name, checkout in checkouts:
            servers.append(start_server(name, checkout))
        load_before = os.getloadavg()[0]
        asyncio.run(measure(servers, args))
        load_after = os.getloadavg()[0]
    finally:
        for server in servers:
            server.process.terminate()
            server.process.wait(60)
    print(f"load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end, on {os.cpu_count()} CPUs")
    reference, differing = servers[0].alone, 0
    medians = {}
    for server in servers:
        mismatched, *medians[server.name] = report(server, args, reference)
        differing += mismatched + sum(r[:2] != s[:2] for r, s in zip(server.alone, reference))
    if args.baseline:
        for n in args.clients:
            (this_wall, this_cpu), (old_wall, old_cpu) = (
                (medians[s.name][0][n], medians[s.name][1][n]) for s in servers
            )
            print(
                f"{n:3d} clients: this checkout takes {this_wall / old_wall:.2f}x the wall time and "
                f"{this_cpu / old_cpu:.2f}x the server CPU time of the baseline (medians)"
            )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
