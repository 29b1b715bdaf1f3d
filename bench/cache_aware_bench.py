#!/usr/bin/env python3
"""cache_aware vs round_robin on simulated workers whose latency grows with their load.

Four troupe-sim workers (`--load-slowdown 0.15`: every latency x 1 + 0.15 x (requests in flight
- 1); `--ttft-base-ms 2`, 20 us of prefill per uncached prompt token, so a miss of a
~1,500-word prompt costs ~100 ms and a hit under 10 ms), one troupe in front, and a closed loop
of 32 client threads sending streamed chats. Each user is a conversation of 3 turns (turn n+1
repeats turns 1..n and the answers), sent one after the other; 32 users are in progress at any
time.
Workloads:

  popular   one system prompt of ~1,500 words shared by every user (the hot-spot case:
            smg's thresholds send every request to the first worker that saw it)
  unique    no shared prefix: every user's system prompt is its own ~1,500 words, one turn
  convo     every user's system prompt is its own ~1,500 words, 3 turns (affinity pays: turn
            2 and 3 find the prompt only on the worker that served turn 1)

Policies: round_robin, cache_aware (Troupe's score mode), cache_aware --cache-aware-mode smg.
Each (workload, policy) run starts fresh workers (empty caches) and a fresh gateway; runs are
interleaved in rounds and the medians of the rounds are printed, with the time to first token
(client side: request sent to the first content event), the workers' prefix-cache hit rate
and the busiest worker's share of the requests.

Usage: bench/cache_aware_bench.py [--rounds 3] [--users 128] [--build build]
         [--workloads popular unique convo] [--json out.json]
"""

import argparse
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from harness import Stream, free_port, get, sse_data, wait_until  # noqa: E402

MODEL = "sim-model"
WORKERS = 4
CONCURRENCY = 32
TURNS = 3
PROMPT_WORDS = 1500
SIM_FLAGS = ["--load-slowdown", "0.15", "--ttft-base-ms", "2", "--itl-ms", "5",
             "--output-tokens", "16", "--log-level", "warn"]
POLICIES = {
    "round_robin": ["--policy", "round_robin"],
    "cache_aware": ["--policy", "cache_aware"],
    "cache_aware(smg)": ["--policy", "cache_aware", "--cache-aware-mode", "smg"],
}


def words(rng, n, tag):
    return " ".join(f"{tag}{rng.randrange(1 << 30):x}" for _ in range(n))


def conversations(workload, users, seed):
    """[[messages of turn 1, of turn 2, ...] per user]."""
    rng = random.Random(seed)
    shared = "You are a helpful assistant. " + words(rng, PROMPT_WORDS, "s")
    out = []
    for u in range(users):
        system = shared if workload == "popular" else f"Document {u}. " + words(
            rng, PROMPT_WORDS, "d")
        turns = 1 if workload == "unique" else TURNS
        history = [{"role": "system", "content": system}]
        convo = []
        for t in range(turns):
            history = history + [{"role": "user", "content": f"user {u} question {t}: " +
                                  words(rng, 20, "q")}]
            convo.append(list(history))
            history = history + [{"role": "assistant", "content": words(rng, 16, "a")}]
        out.append(convo)
    return out


class Procs:
    def __init__(self):
        self.procs = []

    def start(self, args):
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []


def run(build, workload, policy, users, seed):
    sim_bin = os.path.join(build, "apps", "troupe-sim", "troupe-sim")
    troupe_bin = os.path.join(build, "apps", "troupe", "troupe")
    procs = Procs()
    try:
        sims = []
        for _ in range(WORKERS):
            port = free_port()
            procs.start([sim_bin, "--port", str(port), "--model-id", MODEL, *SIM_FLAGS])
            sims.append(f"http://127.0.0.1:{port}")
        for s in sims:
            wait_until(lambda s=s: get(s + "/health", timeout=1).status == 200, 10, what=s)
        gport = free_port()
        procs.start([troupe_bin, "--host", "127.0.0.1", "--port", str(gport),
                     "--prometheus-port", "0", "--log-level", "warn", "--worker-urls", *sims,
                     *POLICIES[policy]])
        gw = f"http://127.0.0.1:{gport}"
        wait_until(lambda: get(gw + "/readiness", timeout=1).status == 200, 15, what="gateway")
        wait_until(lambda: sum(w["routable"] for w in get(gw + "/workers").json()["workers"])
                   == WORKERS, 15, what="workers routable")

        work = queue.Queue()
        for convo in conversations(workload, users, seed):
            work.put(convo)
        ttfts = []
        errors = []
        lock = threading.Lock()

        def client():
            while True:
                try:
                    convo = work.get_nowait()
                except queue.Empty:
                    return
                for messages in convo:
                    body = {"model": MODEL, "messages": messages, "max_tokens": 16,
                            "stream": True}
                    t0 = time.monotonic()
                    first = None
                    try:
                        s = Stream(gw + "/v1/chat/completions", body, timeout=60)
                        for e in s.events():
                            d = sse_data(e)
                            if first is None and d and d != "[DONE]" and '"content":"' in d \
                                    and '"content":""' not in d:
                                first = time.monotonic() - t0
                        s.close()
                        ok = s.status == 200 and first is not None
                    except OSError as e:
                        ok = False
                        first = str(e)
                    with lock:
                        (ttfts if ok else errors).append(first)

        started = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(CONCURRENCY)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        hits = misses = 0
        counts = []
        for s in sims:
            st = get(s + "/sim/stats").json()
            hits += st["cache"]["hits"]
            misses += st["cache"]["misses"]
            counts.append(st["by_path"].get("/v1/chat/completions", 0))
        ttfts.sort()
        pct = lambda q: ttfts[min(len(ttfts) - 1, int(q * len(ttfts)))] * 1000  # noqa: E731
        return {"p50": pct(0.50), "p99": pct(0.99), "mean": statistics.mean(ttfts) * 1000,
                "hit": hits / max(1, hits + misses), "busiest": max(counts) / max(1, sum(counts)),
                "requests": len(ttfts), "errors": len(errors), "seconds": elapsed}
    finally:
        procs.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--users", type=int, default=128)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--workloads", nargs="+", default=["popular", "unique", "convo"])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {}
    for rnd in range(args.rounds):
        for workload in args.workloads:
            for policy in args.policies:
                r = run(args.build, workload, policy, args.users, seed=1000 + rnd)
                results.setdefault((workload, policy), []).append(r)
                print(f"round {rnd + 1} {workload:8} {policy:17} TTFT p50 {r['p50']:6.1f} ms  "
                      f"p99 {r['p99']:6.1f} ms  hit {r['hit']:.2f}  busiest {r['busiest']:.2f}  "
                      f"({r['requests']} ok, {r['errors']} failed, {r['seconds']:.1f} s)",
                      flush=True)
    print("\nmedians of the rounds (TTFT in ms, client side):")
    print(f"{'workload':8} {'policy':17} {'p50':>6} {'p99':>6} {'mean':>6} {'hit':>5} "
          f"{'busiest':>7}")
    summary = {}
    for (workload, policy), rs in results.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("p50", "p99", "mean", "hit",
                                                                 "busiest")}
        summary[f"{workload}/{policy}"] = med
        print(f"{workload:8} {policy:17} {med['p50']:6.1f} {med['p99']:6.1f} {med['mean']:6.1f} "
              f"{med['hit']:5.2f} {med['busiest']:7.2f}")
    for workload in args.workloads:
        rr = summary.get(f"{workload}/round_robin")
        ca = summary.get(f"{workload}/cache_aware")
        if rr and ca:
            print(f"{workload}: cache_aware/round_robin p50 {ca['p50'] / rr['p50']:.2f}x, "
                  f"p99 {ca['p99'] / rr['p99']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
