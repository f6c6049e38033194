"""Load benchmark of the embedded engine: how continuous batching scales with concurrent clients.

Starts the embedded server in its own process (``specconform serve``), then for each client count N
(default 8, 32 and 64) sends N distinct greedy requests at once (mixed thinking budgets, half streamed, half
not, alternating the plain and the speculative model) and reports the wall time of the whole wave, the server's
CPU time during it (user + system, all threads of its process and of its engine processes; from Linux's
``/proc``), the load generator's own CPU time and the latency percentiles. Every response is then compared with
the same request run alone: a difference means a crossed or batch-dependent response, and the script exits
non-zero. Waves of different sizes alternate against the same server, ``--repeats`` times; each size reports the
median wave and the spread (slowest / fastest), so their times compare like with like on the same machine.

The clients are spread over ``--client-processes`` processes of their own (each an event loop with one asynchronous
HTTP client, a connection per request), which start each wave together: one process's CPU time per request would
otherwise delay the later clients' requests by the earlier ones', and the benchmark would time its own load
generator. Their CPU time is reported beside the server's, since on
a machine of few cores they share the cores with the server.

The scaling verdict compares each wave of N clients with the wave of the fewest clients of the same repeat (run
within a second of each other): the median of these paired ratios and a distribution-free interval for it (order
statistics of the binomial, at least 95 % confidence), so that a target such as "64 clients in at most 1.5x the
time of 8" reads as met, missed or not distinguishable at this number of repeats.

``--baseline DIR`` also starts the server of another checkout (``DIR``, e.g. a worktree of ``main``) and sends
every wave to each server in turn, so that both are measured side by side under the same load; the baseline's
responses must equal this checkout's. ``--serve-args`` starts a server of this checkout for each string of extra
``specconform serve`` arguments it is given (e.g. ``"" "--engine-threads 2"``), measured side by side likewise.
The requests are run alone on the first server only; every server's waves are compared with those solo runs.

    PYTHONPATH=$PWD python scripts/bench-embedded-load.py [--clients 8 32 64] [--max-tokens 24] [--repeats 9]
        [--client-processes 8] [--target 1.5] [--serve-args ARGS ...] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import shlex
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from scipy import stats

BUDGETS = (None, 0, 2, 5, 13)
MODELS = ("tiny-think-multi", "tiny-think-multi-spec")
CONFIDENCE = 0.95  # of the intervals for the median paired ratio (at least; 9 repeats give 96.1 %)


@dataclass
class Wave:
    """One wave against one server: its wall time, the server's and the clients' CPU seconds during it, and each
    request's ``(token ids, finish reason, latency in seconds)`` by request index."""

    wall: float
    server_cpu: float
    http_cpu: float  # the server's own process (HTTP, JSON, tokenizing), a part of server_cpu
    client_cpu: float
    results: list[tuple[list[int], str, float]]


@dataclass
class Server:
    """One embedded server under test: its name, process, base URL and the waves measured against it."""

    name: str
    process: subprocess.Popen
    base_url: str
    waves: dict[int, list[Wave]] = field(default_factory=dict)  # by client count, in the order of the repeats
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


def new_client(connections: int) -> httpx.AsyncClient:
    # A fresh connection per request: one kept alive past the server's keep-alive timeout may be closed under it.
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=0)
    return httpx.AsyncClient(timeout=600, limits=limits)


def client_process(connection, start) -> None:
    """A process of clients: for each ``(base URL, [(index, request)])`` received on ``connection``, wait at the
    ``start`` barrier with the other client processes, send the requests at once and send back ``(start time, end
    time, CPU seconds, [(index, result)])``, times from the system-wide monotonic clock."""

    async def run(base_url: str, requests: list[tuple[int, dict]]):
        async with new_client(max(len(requests), 1)) as client:
            cpu_before = time.process_time()
            start.wait()
            began = time.monotonic()
            results = await asyncio.gather(*(ask(client, base_url, request) for _, request in requests))
            ended = time.monotonic()
        return began, ended, time.process_time() - cpu_before, [(i, r) for (i, _), r in zip(requests, results)]

    while True:
        try:
            base_url, requests = connection.recv()
        except EOFError:  # the benchmark is done
            return
        connection.send(asyncio.run(run(base_url, requests)))


class Clients:
    """``count`` client processes that send each wave's requests together (``spread`` round robin)."""

    def __init__(self, count: int):
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's state
        self.start = context.Barrier(count)  # held here for as long as the processes use it
        self.connections, self.processes = [], []
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=client_process, args=(theirs, self.start), daemon=True)
            process.start()
            self.connections.append(ours)
            self.processes.append(process)

    def send(self, base_url: str, requests: list[dict]) -> tuple[float, float, list]:
        """Send ``requests`` at once; ``(wall s, clients' CPU s, results by request index)``."""
        count = len(self.connections)
        for p, connection in enumerate(self.connections):
            connection.send((base_url, [(i, r) for i, r in enumerate(requests) if i % count == p]))
        replies = [connection.recv() for connection in self.connections]
        results = dict(pair for *_, pairs in replies for pair in pairs)
        wall = max(ended for _, ended, *_ in replies) - min(began for began, *_ in replies)
        return wall, sum(cpu for *_, cpu, _ in replies), [results[i] for i in range(len(requests))]

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        for process in self.processes:
            process.join(10)


def cpu_seconds(pid: int, descendants: bool = True) -> float:
    """User plus system CPU seconds process ``pid`` and (``descendants``) its descendants (the engine processes)
    have used so far, all their threads together (Linux ``/proc``)."""
    total, children = 0.0, []
    with contextlib.suppress(FileNotFoundError):  # a process that ended meanwhile counts no more
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()  # the fields after the command name
        total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)
        for task in Path(f"/proc/{pid}/task").iterdir() if descendants else ():
            children += (task / "children").read_text().split()
    return total + sum(cpu_seconds(int(child)) for child in children)


def wave(clients: Clients, server: Server, count: int, max_tokens: int) -> None:
    """Send ``count`` requests at once to ``server`` and record the wave."""
    server_before, http_before = cpu_seconds(server.process.pid), cpu_seconds(server.process.pid, descendants=False)
    wall, client_cpu, results = clients.send(server.base_url, [body(i, max_tokens) for i in range(count)])
    server_cpu = cpu_seconds(server.process.pid) - server_before
    http_cpu = cpu_seconds(server.process.pid, descendants=False) - http_before
    server.waves.setdefault(count, []).append(Wave(wall, server_cpu, http_cpu, client_cpu, results))


def measure(servers: list[Server], args) -> None:
    """A warm-up wave, then waves of every size, ``args.repeats`` times, each sent to every server in turn (the order
    of the sizes and of the servers alternating between repeats); then each request alone."""
    clients = Clients(args.client_processes)
    try:
        for server in servers:  # both paths of every client process, and the servers, warm
            clients.send(server.base_url, [body(i, 2) for i in range(2 * args.client_processes)])
        for repeat in range(args.repeats):
            for count in args.clients if repeat % 2 == 0 else args.clients[::-1]:
                for server in servers if repeat % 2 == 0 else servers[::-1]:  # neither server always goes first
                    wave(clients, server, count, args.max_tokens)
    finally:
        clients.close()

    async def one_at_a_time(server: Server) -> list:
        async with new_client(1) as client:
            return [await ask(client, server.base_url, body(i, args.max_tokens)) for i in range(max(args.clients))]

    servers[0].alone = asyncio.run(one_at_a_time(servers[0]))


def start_server(name: str, checkout: Path, serve_args: list[str]) -> Server:
    """Start ``specconform serve`` of ``checkout`` (with ``serve_args``) on a free loopback port and wait until it
    answers."""
    with socket.socket() as probe:  # a free loopback port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    search_path = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    environment = {**os.environ, "PYTHONPATH": search_path}  # the checkout's code first
    process = subprocess.Popen(
        [sys.executable, "-m", "specconform.harness.cli", "serve", "--port", str(port), *serve_args],
        cwd=checkout,
        env=environment,
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


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``(low, high, coverage)``: the order statistics that bound the median of ``values`` ' distribution with at
    least ``confidence`` (the binomial, distribution-free), and their exact coverage; the whole range if fewer
    values allow no such bound."""
    ordered, n = sorted(values), len(values)
    # the largest k with P(Binomial(n, 1/2) <= k - 1) <= (1 - confidence) / 2: the interval [x_(k), x_(n + 1 - k)]
    k = max((k for k in range(1, n // 2 + 1) if stats.binom.cdf(k - 1, n, 0.5) <= (1 - confidence) / 2), default=1)
    return ordered[k - 1], ordered[n - k], float(1 - 2 * stats.binom.cdf(k - 1, n, 0.5))


def report(server: Server, args, reference: list) -> tuple[int, dict[int, float], dict[int, float]]:
    """Print ``server`` 's waves; returns how many responses differ from ``reference`` (the solo runs), and the
    median wall and server CPU seconds per client count."""
    differing, walls_median, cpus_median = 0, {}, {}
    for n, runs in server.waves.items():
        walls = sorted(run.wall for run in runs)
        cpus = sorted(run.server_cpu for run in runs)
        http_cpu = statistics.median(run.http_cpu for run in runs)
        client_cpu = statistics.median(run.client_cpu for run in runs)
        walls_median[n], cpus_median[n] = statistics.median(walls), statistics.median(cpus)
        latencies = sorted(latency for run in runs for *_, latency in run.results)
        mismatched = sorted({i for run in runs for i, r in enumerate(run.results) if r[:2] != reference[i][:2]})
        differing += len(mismatched)
        tokens = sum(len(ids) for ids, *_ in runs[0].results)
        print(
            f"{server.name}: {n:3d} clients: median {walls_median[n]:6.3f} s wall (fastest {walls[0]:.3f}, slowest "
            f"{walls[-1]:.3f}: spread {walls[-1] / walls[0]:.2f}x over {len(walls)}), server CPU {cpus_median[n]:.2f} s"
            f" (spread {cpus[-1] / cpus[0]:.2f}x; its HTTP process {http_cpu:.2f} s), clients' CPU {client_cpu:.2f} s, "
            f"{tokens / walls_median[n]:6.1f} tokens/s, latency p50 {statistics.median(latencies):.3f} s, p95 "
            f"{statistics.quantiles(latencies, n=20)[-1]:.3f} s, max {latencies[-1]:.3f} s; {len(mismatched)} differ "
            f"from their solo run {mismatched[:8]}"
        )
    if server.alone:
        print(f"{server.name}: {len(server.alone)} requests one at a time: {sum(r[2] for r in server.alone):.2f} s")
    first = min(args.clients)
    for n in sorted(args.clients)[1:]:
        ratios = [run.wall / base.wall for run, base in zip(server.waves[n], server.waves[first])]
        low, high, coverage = median_interval(ratios)
        if coverage < CONFIDENCE:
            verdict = f"no verdict (too few repeats for a {CONFIDENCE:.0%} interval)"
        else:
            verdict = "met" if high <= args.target else "missed" if low > args.target else "not distinguishable"
        print(
            f"{server.name}: {n} clients take {statistics.median(ratios):.2f}x the wall time of {first} (median of "
            f"{len(ratios)} paired waves; {coverage:.1%} interval {low:.2f}x to {high:.2f}x; medians' ratio "
            f"{walls_median[n] / walls_median[first]:.2f}x) and {cpus_median[n] / cpus_median[first]:.2f}x the server "
            f"CPU time; target {args.target}x: {verdict}"
        )
    return differing, walls_median, cpus_median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--client-processes", type=int, default=8)
    parser.add_argument("--target", type=float, default=1.5, help="the largest wall-time ratio to the fewest clients")
    parser.add_argument(
        "--serve-args",
        nargs="+",
        default=[""],
        help="a server of this checkout for each string of extra `specconform serve` arguments",
    )
    parser.add_argument("--baseline", type=Path, help="a checkout whose server is measured side by side with this one")
    args = parser.parse_args()
    if args.client_processes < 1 or min(args.clients) < 1 or args.repeats < 1:
        parser.error("--client-processes, --clients and --repeats must be at least 1")
    configurations = [(f"this {extra}".strip(), Path.cwd(), shlex.split(extra)) for extra in args.serve_args]
    if args.baseline:
        configurations.append(("baseline", args.baseline.resolve(), []))
    servers = []
    try:
        for name, checkout, serve_args in configurations:
            servers.append(start_server(name, checkout, serve_args))
        load_before = os.getloadavg()[0]
        measure(servers, args)
        load_after = os.getloadavg()[0]
    finally:
        for server in servers:
            server.process.terminate()
            server.process.wait(60)
    print(
        f"load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end, on {os.cpu_count()} CPUs; "
        f"{args.client_processes} client processes"
    )
    differing, medians = 0, {}
    for server in servers:
        mismatched, *medians[server.name] = report(server, args, servers[0].alone)
        differing += mismatched
    for this in servers[: len(args.serve_args)] if args.baseline else ():
        old = servers[-1]
        for n in args.clients:
            ratios = [run.wall / base.wall for run, base in zip(this.waves[n], old.waves[n])]
            low, high, coverage = median_interval(ratios)
            print(
                f"{n:3d} clients: {this.name} takes {statistics.median(ratios):.2f}x the wall time of the baseline "
                f"(median of {len(ratios)} paired waves; {coverage:.1%} interval {low:.2f}x to {high:.2f}x) and "
                f"{medians[this.name][1][n] / medians[old.name][1][n]:.2f}x its server CPU time (medians)"
            )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
