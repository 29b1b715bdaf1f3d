#!/usr/bin/env python3
"""The cluster as one cache: prefix-cache hit rate and TTFT through 1, 3 and 5 gateway nodes.

W troupe-sim workers (a prefix cache of --cache-capacity-blocks, prefill cost per uncached
token) serve a shared-prefix workload from troupe-bench (system prompts x users x multi-turn
chats, streamed) whose requests go round robin over the N nodes, as a load balancer would. Each
(nodes, policy) runs on fresh processes; the hit rate is the sims' own (/sim/stats: cached blocks
found at admission over blocks looked up), TTFT p50/p90/p99 is troupe-bench's. With
--share both, cache_aware also runs with the shared prefix view off
(--cluster-prefix-block-bytes 0), for the before/after. With --placements off first all, each
configuration of more than one node also runs with each --cluster-placement (docs/cluster.md,
"Placement by owner"), rounds interleaved (round 1 of every variant, then round 2, ...); one node
has nobody to delegate to, so its row is measured once per round and is every variant's baseline.

Usage: bench/cluster_cache.py [--nodes 1 3 5] [--policies round_robin power_of_two
           consistent_hash cache_aware] [--share on|off|both] [--workers 4] [--rounds 1]
           [--placements off first all] [--build build] [--json out.json]
           [--gateway-flag=FLAG ...]
Workload flags (--system-prompts 8 --system-prompt-tokens 1500 --users 48 --turns 4
--concurrency 16 --max-tokens 16) and sim flags (--prefill-us-per-token 20
--cache-capacity-blocks 300 --ttft-base-ms 5 --itl-ms 5) are the issue's (docs/performance.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from loopback import Processes, free_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MODEL = "sim-model"


def get_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if pred():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class StartupError(RuntimeError):
    pass


class Procs(Processes):
    def __init__(self, build, gateway_flags=()):
        super().__init__()
        self.build = build
        self.gateway_flags = list(gateway_flags)

    def sim(self, args):
        port = free_port()
        self.start([os.path.join(self.build, "apps", "troupe-sim", "troupe-sim"), "--port", port,
                    "--model-id", MODEL, "--request-log-size", 0, "--log-level", "warn",
                    "--prefill-us-per-token", args.prefill_us_per_token,
                    "--cache-capacity-blocks", args.cache_capacity_blocks,
                    "--ttft-base-ms", args.ttft_base_ms, "--itl-ms", args.itl_ms])
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: urllib.request.urlopen(url + "/health", timeout=1).status == 200, 10,
                   url)
        return url

    def cluster(self, n, sims, policy, share, placement=None):
        ports = [(free_port(), free_port()) for _ in range(n)]
        urls = []
        for i, (port, cport) in enumerate(ports):
            flags = ["--port", port, "--prometheus-port", 0, "--log-level", "warn",
                     "--policy", policy, "--worker-urls", *sims,
                     "--health-check-interval-secs", 1, *self.gateway_flags]
            if n > 1:
                peers = ",".join(f"127.0.0.1:{c}" for j, (_, c) in enumerate(ports) if j != i)
                flags += ["--node-name", f"node-{i}", "--cluster-port", cport,
                          "--cluster-peers", peers]
                if not share:
                    flags += ["--cluster-prefix-block-bytes", 0]
                if placement:
                    flags += ["--cluster-placement", placement]
            self.start([os.path.join(self.build, "apps", "troupe", "troupe"), *flags])
            urls.append(f"http://127.0.0.1:{port}")
        for u in urls:
            self.check_alive()
            wait_until(lambda: routable(u) == len(sims), 30, f"{u} to route to every worker")
            if n > 1:
                try:
                    wait_until(lambda: get_json(u + "/admin/cluster")["counts"]["up"] == n, 90,
                               f"{u} to see {n} members up")
                except RuntimeError as e:
                    self.check_alive()
                    raise StartupError(str(e)) from e
        return urls

    def check_alive(self):
        for p in self.procs:
            if p.poll() is not None:
                raise StartupError(f"{' '.join(p.args[:3])} exited with {p.returncode} at start "
                                   "(a port taken between free_port and bind?)")


def routable(url):
    ws = get_json(url + "/workers")["workers"]
    return sum(1 for w in ws if w.get("routable"))


def bench(args, urls):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [os.path.join(args.build, "apps", "troupe-bench", "troupe-bench"),
               "--url", ",".join(urls), "--model", MODEL, "--progress", "off", "--json", out,
               "--concurrency", args.concurrency, "--requests", args.users * args.turns,
               "--duration", 600, "--system-prompts", args.system_prompts,
               "--system-prompt-tokens", args.system_prompt_tokens, "--users", args.users,
               "--turns", args.turns, "--max-tokens", args.max_tokens,
               "--routing-key-header", "x-session-id", "--seed", args.seed]
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"troupe-bench failed ({p.returncode}): {p.stderr}")
        with open(out) as f:
            return json.load(f)["stages"][0]


def one(args, n, policy, share, placement=None):
    procs = Procs(args.build, args.gateway_flag)
    try:
        sims = [procs.sim(args) for _ in range(args.workers)]
        urls = procs.cluster(n, sims, policy, share, placement)
        stage = bench(args, urls)
        hits = misses = 0
        for s in sims:
            c = get_json(s + "/sim/stats")["cache"]
            hits += c["hits"]
            misses += c["misses"]
        bytes_sent = 0
        picks = {}
        placed = {}
        for u in urls:
            for a in get_json(u + "/admin/actors")["actors"]:
                if a.get("kind") == "cluster_node" and policy == "cache_aware":
                    full = get_json(u + f"/admin/actors/{a['id']}")
                    bytes_sent += full["state"]["prefix_view"]["bytes_sent"]
                    # Placement by owner: asks, answers, timeouts over the nodes; the worst RTT.
                    for k, v in full["state"].get("placement", {}).items():
                        if k in ("delegated", "relayed", "late", "expired", "unreachable",
                                 "answered"):
                            placed[k] = placed.get(k, 0) + v
                        elif k in ("rtt_max_ms", "rtt_mean_ms"):
                            placed[k] = round(max(placed.get(k, 0), v), 2)
                if a.get("kind") == "policy" and policy == "cache_aware":
                    # cache_aware's decisions, summed over the nodes (cache_hit, most_room, ...)
                    state = get_json(u + f"/admin/actors/{a['id']}").get("state", {})
                    for k, v in state.get("state", {}).get("picks", {}).items():
                        picks[k] = picks.get(k, 0) + v
                    view = state.get("state", {}).get("shared_view")
                    if view and view["distinct_blocks"] and "copies" not in picks:
                        # Workers per prefix block, per the first node's view.
                        picks["copies"] = round(view["blocks"] / view["distinct_blocks"], 2)
        return {"nodes": n, "policy": policy, "share": share, "ok": stage["ok"],
                "failed": stage["failed"], "hit_rate": hits / max(1, hits + misses),
                "ttft_p50_ms": stage["ttft_ms"]["p50"], "ttft_p90_ms": stage["ttft_ms"]["p90"],
                "ttft_p99_ms": stage["ttft_ms"]["p99"], "prefix_bytes_sent": bytes_sent,
                "picks": picks, "placement": placement or "-", "placed": placed}
    finally:
        procs.stop_all()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 3, 5])
    ap.add_argument("--policies", nargs="+",
                    default=["round_robin", "power_of_two", "consistent_hash", "cache_aware"])
    ap.add_argument("--share", choices=["on", "off", "both"], default="on",
                    help="the shared prefix view of cache_aware (off: each node its own)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--system-prompts", type=int, default=8)
    ap.add_argument("--system-prompt-tokens", type=int, default=1500)
    ap.add_argument("--users", type=int, default=48)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prefill-us-per-token", type=int, default=20)
    ap.add_argument("--cache-capacity-blocks", type=int, default=300)
    ap.add_argument("--ttft-base-ms", type=float, default=5)
    ap.add_argument("--itl-ms", type=float, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--gateway-flag", action="append", default=[],
                    help="one more flag for every node (repeat; e.g. --gateway-flag=--cache-aware-mode "
                         "--gateway-flag=smg)")
    ap.add_argument("--placements", nargs="+", choices=["off", "first", "all"],
                    help="cache_aware through several nodes: run each --cluster-placement")
    args = ap.parse_args()

    def run(policy, share, n, r, placement):
        try:
            row = one(args, n, policy, share, placement)
        except StartupError as e:
            # Fresh processes and ports, once: a start-up failure is not a result.
            print(f"{policy} nodes={n} round {r + 1}: {e}; starting over once", flush=True)
            row = one(args, n, policy, share, placement)
        row["round"] = r + 1
        runs.append(row)
        print(f"{policy:16} share={'on ' if share else 'off'} nodes={n} "
              + (f"placement={placement} " if placement else "")
              + f"round {r + 1}: hit rate {row['hit_rate']:.3f}  TTFT p50 "
              f"{row['ttft_p50_ms']:.1f} p90 {row['ttft_p90_ms']:.1f} p99 "
              f"{row['ttft_p99_ms']:.1f} ms  ok {row['ok']} failed {row['failed']}"
              + (f"  prefix bytes sent {row['prefix_bytes_sent']}"
                 if row["prefix_bytes_sent"] else "")
              + (f"  picks {row['picks']}" if row["picks"] else "")
              + (f"  placement {row['placed']}" if row["placed"] else ""), flush=True)
        return row

    runs = []
    variants = []  # (policy, share, placement)
    for policy in args.policies:
        shares = [True]
        if policy == "cache_aware" and args.share != "on":
            shares = [True, False] if args.share == "both" else [False]
        for share in shares:
            places = args.placements if policy == "cache_aware" and share and args.placements \
                else [None]
            variants += [(policy, share, p) for p in places]
    if args.placements:
        # Interleaved: every variant's round r before any variant's round r + 1.
        for r in range(args.rounds):
            for policy, share, placement in variants:
                for n in args.nodes:
                    if n == 1 and placement not in (None, args.placements[0]):
                        continue  # alone, a node places everything itself: measured once
                    row = run(policy, share, n, r, placement if n > 1 else None)
                    if n == 1 and placement:
                        row["placement"] = placement
                        runs.extend({**row, "placement": p} for p in args.placements[1:])
    else:
        for policy, share, placement in variants:
            for n in args.nodes:
                for r in range(args.rounds):
                    run(policy, share, n, r, placement)

    # Medians over rounds, and each configuration against one node of the same policy.
    print("\n| policy | view | placement | nodes | hit rate | TTFT p50 | p90 | p99 | "
          "hit rate − 1 node | p50 / 1 node |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for policy, share, placement in variants:
        rows = [x for x in runs if x["policy"] == policy and x["share"] == share
                and x["placement"] == (placement or "-")]
        if not rows:
            continue
        med = {}
        for n in args.nodes:
            rs = [x for x in rows if x["nodes"] == n]
            med[n] = {k: statistics.median(x[k] for x in rs)
                      for k in ("hit_rate", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms")}
        base = med.get(1)
        for n in args.nodes:
            m = med[n]
            dh = f"{m['hit_rate'] - base['hit_rate']:+.3f}" if base else "-"
            dp = f"{m['ttft_p50_ms'] / base['ttft_p50_ms']:.2f}" if base else "-"
            view = ("shared" if share else "per node") if policy == "cache_aware" else "-"
            print(f"| {policy} | {view} | {placement or '-'} | {n} | {m['hit_rate']:.3f} | "
                  f"{m['ttft_p50_ms']:.1f} ms | {m['ttft_p90_ms']:.1f} ms | "
                  f"{m['ttft_p99_ms']:.1f} ms | {dh} | {dp} |")
            summary.append({"policy": policy, "share": share, "placement": placement,
                            "nodes": n, **m})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": runs, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
