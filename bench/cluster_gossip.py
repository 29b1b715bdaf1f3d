#!/usr/bin/env python3
"""Gossip cost at scale: N gateway nodes sharing W workers, with load in flight that changes.

One nginx answers on W loopback ports as W workers (health checks and /v1/models at once; chat
completions passed to bench/slow_upstream.py, which holds each one --hold seconds). N troupe
nodes form one cluster (each seeded with the first two; they link as a full mesh); the first
registers the W workers (--worker-urls), the others learn them by replication. Health checks are
an hour apart: after the first one, nothing but the cluster and the load generator keeps the
nodes busy. The load generator keeps --users-per-node requests in flight on every node (a user
sends its next request when its previous one answered), so every node's load changes on about
2 x users / hold workers a second.

Two windows of --window seconds are measured, idle (no requests) then under load, after
--warmup seconds of each. Per node, from the node itself:
- node actor CPU: `cpu_seconds` of cluster_node in /admin/actors (thread CPU time its handlers
  took), as % of one core; the whole process's CPU (/proc/PID/stat) beside it;
- cluster bytes/s sent and received (`bytes_out` / `bytes_in` of cluster_node: the payloads the
  node wrote to and read from its links; BASP framing adds ~60 bytes per message);
- `troupe_cluster_load_age_seconds` p99 over the window (from the histogram's buckets,
  interpolated within the bucket it falls in).
Medians and maxima over nodes are printed, with the machine's load average (1 min) at the end of
each window; --json writes every node's numbers.

Usage: bench/cluster_gossip.py [--nodes 20] [--workers 2000] [--users-per-node 8] [--hold 1]
           [--warmup 15] [--window 30] [--build build] [--json out.json]
Targets (issue 12 part 5): node actor CPU < 10% of a core, < 1 MB/s per node, load age p99 <
200 ms. Needs nginx (scripts/install-deps.sh).
"""

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from fake_worker import FakeWorkers
from loopback import free_port

TAKEN = set()


def unique_port():
    """A free port no other node of this run was given (free_port alone may hand one out twice
    before anything binds it)."""
    while True:
        p = free_port()
        if p not in TAKEN:
            TAKEN.add(p)
            return p

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TICKS = os.sysconf("SC_CLK_TCK")
BODY = json.dumps({"model": "m", "max_tokens": 8,
                   "messages": [{"role": "user", "content": "hello"}]}).encode()


def worker_ports(count, start=20000):
    """`count` ports below the ephemeral range that nothing listens on."""
    import socket
    ports = []
    p = start
    while len(ports) < count:
        if p >= 32768:
            sys.exit("not enough free ports below 32768")
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
                ports.append(p)
            except OSError:
                pass
        p += 1
    return ports


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def get_text(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Node:
    def __init__(self, index, binary, seeds, worker_urls, logdir, extra=()):
        self.name = f"node-{index}"
        self.port = unique_port()
        self.cluster_port = unique_port()
        self.prom_port = unique_port()
        self.url = f"http://127.0.0.1:{self.port}"
        flags = [binary, "--host", "127.0.0.1", "--port", str(self.port), "--node-name",
                 self.name, "--cluster-port", str(self.cluster_port), "--prometheus-port",
                 str(self.prom_port), "--health-check-interval-secs", "3600", "--io-threads",
                 "1", "--log-level", "warn", "--policy", "round_robin"]
        if seeds:
            flags += ["--cluster-peers", ",".join(seeds)]
        if worker_urls:
            flags += ["--worker-urls", *worker_urls]
        flags += list(extra)
        self.log = open(os.path.join(logdir, self.name + ".log"), "w")
        self.proc = subprocess.Popen(flags, stdout=self.log, stderr=subprocess.STDOUT)

    @property
    def cluster_address(self):
        return f"127.0.0.1:{self.cluster_port}"

    def cluster_node(self):
        actors = get_json(self.url + "/admin/actors")["actors"]
        node = next(a for a in actors if a["kind"] == "cluster_node")
        return get_json(self.url + f"/admin/actors/{node['id']}")["state"]

    def process_cpu(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    def load_age_buckets(self):
        """{upper bound: cumulative count} of troupe_cluster_load_age_seconds."""
        out = {}
        for line in get_text(f"http://127.0.0.1:{self.prom_port}/metrics").splitlines():
            m = re.match(r'troupe_cluster_load_age_seconds_bucket\{le="([^"]+)"\} (\S+)', line)
            if m:
                out[float(m.group(1))] = float(m.group(2))
        return out

    def sample(self):
        n = self.cluster_node()
        return {"t": time.monotonic(), "node_cpu": n.get("cpu_seconds", 0.0),
                "process_cpu": self.process_cpu(), "bytes_out": n["bytes_out"],
                "bytes_in": n["bytes_in"], "messages_out": n["messages_out"],
                "load_entries_sent": n.get("load_entries_sent", 0),
                "members_up": n["members_up"], "ages": self.load_age_buckets()}

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def quantile(before, after, q):
    """The q-quantile of the observations between two cumulative bucket snapshots."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    total = counts[-1] if counts else 0
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for b, c in zip(bounds, counts):
        if c >= rank:
            if b == float("inf"):
                return prev_bound
            return prev_bound + (b - prev_bound) * (rank - prev_count) / max(c - prev_count, 1e-9)
        prev_bound, prev_count = b, c
    return bounds[-1]


def window_numbers(a, b):
    dt = b["t"] - a["t"]
    return {"node_cpu_pct": 100 * (b["node_cpu"] - a["node_cpu"]) / dt,
            "process_cpu_pct": 100 * (b["process_cpu"] - a["process_cpu"]) / dt,
            "bytes_out_per_s": (b["bytes_out"] - a["bytes_out"]) / dt,
            "bytes_in_per_s": (b["bytes_in"] - a["bytes_in"]) / dt,
            "messages_out_per_s": (b["messages_out"] - a["messages_out"]) / dt,
            "load_entries_per_s": (b["load_entries_sent"] - a["load_entries_sent"]) / dt,
            "load_age_p99_ms": (lambda v: None if v is None else 1000 * v)(
                quantile(a["ages"], b["ages"], 0.99)),
            "load_age_p50_ms": (lambda v: None if v is None else 1000 * v)(
                quantile(a["ages"], b["ages"], 0.50)),
            "members_up_min": min(a["members_up"], b["members_up"])}


class Load:
    """`users` keep-alive clients per node, each with one request in flight at a time."""

    def __init__(self, nodes, users):
        self.nodes, self.users = nodes, users
        self.done = 0
        self.failed = 0
        self.stop = False

    async def user(self, node):
        request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                   f"application/json\r\nContent-Length: {len(BODY)}\r\n\r\n").encode() + BODY
        while not self.stop:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", node.port)
                while not self.stop:
                    writer.write(request)
                    head = await reader.readuntil(b"\r\n\r\n")
                    status = int(head.split(b" ", 2)[1])
                    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                    await reader.readexactly(length)
                    if status == 200:
                        self.done += 1
                    else:
                        self.failed += 1
                        await asyncio.sleep(0.5)
                writer.close()
            except (OSError, asyncio.IncompleteReadError, AttributeError, ValueError):
                self.failed += 1
                await asyncio.sleep(0.5)

    async def run(self, seconds):
        self.stop = False
        tasks = [asyncio.create_task(self.user(n)) for n in self.nodes for _ in range(self.users)]
        await asyncio.sleep(seconds)
        self.stop = True
        await asyncio.wait(tasks, timeout=30)


def wait_for(what, check, timeout, show=None):
    deadline = time.time() + timeout
    while True:
        try:
            if check():
                return
        except (OSError, ValueError, KeyError, StopIteration):
            pass
        if time.time() > deadline:
            sys.exit(f"timed out waiting for {what}" + (f": {show()}" if show else ""))
        time.sleep(1)


def members_up(nodes):
    out = []
    for n in nodes:
        try:
            out.append(n.cluster_node()["members_up"])
        except (OSError, ValueError, KeyError, StopIteration):
            out.append(None)
    return f"members up per node {out}"


def routable(node, workers):
    listed = get_json(node.url + "/workers", timeout=10)["workers"]
    return len(listed) == workers and all(w.get("routable") for w in listed)


def summarize(label, per_node, loadavg):
    def col(key, scale=1.0):
        vals = [n[key] for n in per_node if n[key] is not None]
        if not vals:
            return "n/a"
        return f"{statistics.median(vals) * scale:.1f} / {max(vals) * scale:.1f}"
    print(f"\n{label} (median / max over {len(per_node)} nodes; load average {loadavg:.2f})")
    print(f"  node actor CPU       % of a core  {col('node_cpu_pct')}")
    print(f"  process CPU          % of a core  {col('process_cpu_pct')}")
    print(f"  cluster bytes out    KB/s         {col('bytes_out_per_s', 1e-3)}")
    print(f"  cluster bytes in     KB/s         {col('bytes_in_per_s', 1e-3)}")
    print(f"  messages out         /s           {col('messages_out_per_s')}")
    print(f"  load entries sent    /s           {col('load_entries_per_s')}")
    print(f"  load age p50         ms           {col('load_age_p50_ms')}")
    print(f"  load age p99         ms           {col('load_age_p99_ms')}")


def measure(nodes, seconds):
    before = [n.sample() for n in nodes]
    time.sleep(seconds)
    after = [n.sample() for n in nodes]
    with open("/proc/loadavg") as f:
        loadavg = float(f.read().split()[0])
    return [dict(window_numbers(a, b), node=n.name) for n, a, b in zip(nodes, before, after)], \
        loadavg


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--workers", type=int, default=2000)
    p.add_argument("--users-per-node", type=int, default=8)
    p.add_argument("--hold", type=float, default=1.0)
    p.add_argument("--warmup", type=float, default=15)
    p.add_argument("--window", type=float, default=30)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--join-batch", type=int, default=4, help="nodes started at a time")
    p.add_argument("--node-flag", dest="node_flags", action="append", default=[],
                   help="a flag given to every node (repeat; e.g. --node-flag=--cluster-...)")
    p.add_argument("--json")
    a = p.parse_args()
    binary = os.path.join(a.build, "apps", "troupe", "troupe")
    logdir = tempfile.mkdtemp(prefix="troupe-gossip-bench-")
    upstream_port = free_port()
    upstream = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "slow_upstream.py"),
                                 "--port", str(upstream_port), "--hold", str(a.hold)])
    workers = FakeWorkers(worker_ports(a.workers), chat_upstream=f"127.0.0.1:{upstream_port}")
    nodes = []
    try:
        started = time.time()
        first = Node(0, binary, [], workers.urls, logdir, a.node_flags)
        nodes.append(first)
        wait_for("node-0", lambda: get_json(first.url + "/health", 1) is not None, 60)
        seeds = [first.cluster_address]
        wait_for(f"{a.workers} workers routable on node-0", lambda: routable(first, a.workers),
                 600)
        # Nodes join a few at a time, each batch linked to every member and with every worker
        # routable before the next starts: on a small machine twenty nodes starting at once
        # (each health-checking every worker) starve each other past the failure detector.
        while len(nodes) < a.nodes:
            batch = [Node(i, binary, seeds, [], logdir, a.node_flags)
                     for i in range(len(nodes), min(a.nodes, len(nodes) + a.join_batch))]
            nodes += batch
            if len(seeds) < 2:
                seeds.append(batch[0].cluster_address)
            wait_for(f"{len(nodes)} members up on every node",
                     lambda: all(n.cluster_node()["members_up"] == len(nodes) - 1
                                 for n in nodes), 300, lambda: members_up(nodes))
            wait_for(f"{a.workers} workers routable on the new nodes",
                     lambda: all(routable(n, a.workers) for n in batch), 600)
            print(f"{len(nodes)} nodes up, every worker routable, after "
                  f"{time.time() - started:.0f} s", flush=True)
        time.sleep(a.warmup)
        idle, idle_load = measure(nodes, a.window)
        load = Load(nodes, a.users_per_node)

        async def loaded():
            task = asyncio.create_task(load.run(a.warmup + a.window + 2))
            await asyncio.sleep(a.warmup)
            result = await asyncio.get_running_loop().run_in_executor(None, measure, nodes,
                                                                      a.window)
            await task
            return result
        busy, busy_load = asyncio.run(loaded())
        rate = load.done / (2 * a.warmup + a.window + 2)
        summarize("idle", idle, idle_load)
        summarize(f"under load ({a.users_per_node} requests in flight per node, held {a.hold} s: "
                  f"{rate:.0f} requests/s over the cluster, {load.failed} failed)", busy,
                  busy_load)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"args": vars(a), "idle": idle, "idle_loadavg": idle_load,
                           "load": busy, "load_loadavg": busy_load, "requests_per_s": rate,
                           "failed": load.failed}, f, indent=1)
    finally:
        for n in nodes:
            n.stop()
        workers.stop()
        upstream.terminate()
        upstream.wait()
        print(f"node logs: {logdir}")


if __name__ == "__main__":
    main()
