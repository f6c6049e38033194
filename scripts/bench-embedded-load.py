"""Load benchmark of the embedded engine: how continuous batching scales with concurrent clients.

Starts the embedded server in its own process (``specconform serve``), then for each client count N
(default 8, 32 and 64) sends N distinct greedy requests at once (mixed thinking budgets, half streamed, half
not, alternating the plain and the speculative model) and reports the wall time of the whole wave, the server
process's CPU time during it (user + system, all its threads; from Linux's ``/proc``) and the latency
percentiles. Every response is then compared with the same request run alone: a difference means a crossed or
batch-dependent response, and the script exits non-zero. Waves of different sizes alternate
against the same server, ``--repeats`` times; each size reports the median wave and the spread (slowest /
fastest), so their times compare like with like on the same machine. The clients are coroutines sharing one
asynchronous HTTP client (a connection per request), so the load generator itself costs little of the CPU that
the server shares with it.

    PYTHONPATH=$PWD python scripts/bench-embedded-load.py [--clients 8 32 64] [--max-tokens 24] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx

BUDGETS = (None, 0, 2, 5, 13)
MODELS = ("tiny-think-multi", "tiny-think-multi-spec")


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
    """User plus system CPU seconds process ``pid`` has used so far, all its threads together (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()  # the fields after the command name
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


async def wave(
    client: httpx.AsyncClient, base_url: str, server_pid: int, clients: int, max_tokens: int
) -> tuple[float, float, list[tuple[list[int], str, float]]]:
    """``(wall seconds, server CPU seconds, results)`` of ``clients`` requests sent at once."""
    requests = [body(i, max_tokens) for i in range(clients)]
    cpu_before, began = cpu_seconds(server_pid), time.perf_counter()
    results = await asyncio.gather(*(ask(client, base_url, r) for r in requests))
    return time.perf_counter() - began, cpu_seconds(server_pid) - cpu_before, list(results)


async def measure(base_url: str, server_pid: int, args) -> tuple[dict, list]:
    """Waves of every size, ``args.repeats`` times, then each request alone."""
    # A fresh connection per request: one kept alive past the server's keep-alive timeout may be closed under it.
    limits = httpx.Limits(max_connections=max(args.clients), max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        await ask(client, base_url, body(0, 2))  # warm up both paths
        await ask(client, base_url, body(3, 2))
        waves = {n: [] for n in args.clients}
        for _ in range(args.repeats):
            for n in args.clients:
                waves[n].append(await wave(client, base_url, server_pid, n, args.max_tokens))
        alone = [await ask(client, base_url, body(i, args.max_tokens)) for i in range(max(args.clients))]
    return waves, alone


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with socket.socket() as probe:  # a free loopback port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "harness.cli", "serve", "--port", str(port)])
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health").raise_for_status()
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the embedded server did not start") from None
                time.sleep(0.5)
        load_before = os.getloadavg()[0]
        waves, alone = asyncio.run(measure(base_url, server.pid, args))
        load_after = os.getloadavg()[0]
    finally:
        server.terminate()
        server.wait(60)
    crossed, medians, cpu_medians = 0, {}, {}
    for n, runs in waves.items():
        walls = sorted(seconds for seconds, _, _ in runs)
        cpus = sorted(cpu for _, cpu, _ in runs)
        medians[n], cpu_medians[n] = statistics.median(walls), statistics.median(cpus)
        latencies = sorted(latency for *_, results in runs for *_, latency in results)
        mismatched = sorted({i for *_, results in runs for i, r in enumerate(results) if r[:2] != alone[i][:2]})
        crossed += len(mismatched)
        tokens = sum(len(r[0]) for r in runs[0][2])
        print(
            f"{n:3d} clients: median {medians[n]:6.2f} s wall (spread {walls[-1] / walls[0]:.2f}x over "
            f"{len(walls)}), server CPU {cpu_medians[n]:.2f} s (spread {cpus[-1] / cpus[0]:.2f}x), "
            f"{tokens / medians[n]:6.1f} tokens/s, latency p50 {statistics.median(latencies):.2f} s, "
            f"p95 {statistics.quantiles(latencies, n=20)[-1]:.2f} s, max {latencies[-1]:.2f} s; "
            f"{len(mismatched)} differ from their solo run {mismatched[:8]}"
        )
    print(f"load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end, on {os.cpu_count()} CPUs")
    solo = sum(r[2] for r in alone)
    print(f"{len(alone)} requests one at a time: {solo:.2f} s")
    first = min(args.clients)
    for n in sorted(args.clients)[1:]:
        print(
            f"{n} clients take {medians[n] / medians[first]:.2f}x the wall time and "
            f"{cpu_medians[n] / cpu_medians[first]:.2f}x the server CPU time of {first} (medians)"
        )
    return 1 if crossed else 0


if __name__ == "__main__":
    sys.exit(main())
