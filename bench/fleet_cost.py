#!/usr/bin/env python3
"""What a request costs the gateway with W workers registered, counted rather than timed:
instructions and heap allocations per request under `valgrind --tool=callgrind`, for each policy
and fleet size. On a shared machine requests/s (bench/fleet_scale.py) moves by 30% between runs;
these counts move by well under 1%, so they say whether the gateway's own work grows with the
fleet. What they cannot see is the kernel's side (a cold socket per request at 4,000 workers):
fleet_scale's system CPU and bench/fleet_proxies.py measure that.

The fleet is bench/fake_worker.py's nginx on W loopback ports, registered by --worker-urls; the
requests are fleet_scale's (1,000 sessions, each a session key and a shared-prefix prompt).
Counting starts after a warm-up of at least 1.2 W requests, so every worker has its pooled
connection (`callgrind_control -z`), and stops after a wrk run at fixed concurrency; the counts
are divided by the requests wrk completed. Of several such windows the least is reported (and
the most, for what background work adds: the inspector's refresh asks all W worker proxies for
their mailbox size every 15 s; health checks are held off during the run). --idle N then counts
N seconds with no requests: the background work alone. --churn N then counts what a fleet
change costs: windows in which N workers are added by `POST /workers` and removed again by
`DELETE` (paced, one operation every --churn-gap s), less windows as long without them, divided
by the operations; the functions whose own instructions grew the most are listed.

With --cache-sim, callgrind also simulates the caches (`--cache-sim=yes`: the first-level data
cache and the last-level cache of the machine it runs on) and each row adds data misses per
request: the cost instructions do not show, of a request meeting a cold worker's state (its
connection, buffers, pool entry) in a fleet too large to stay in cache. The kernel's side stays
invisible to it.

Usage: bench/fleet_cost.py [--workers 4 4000] [--policies round_robin cache_aware ...]
                           [--concurrency 16] [--duration 5] [--build build] [--top 0]
                           [--keep DIR] [--cache-sim] [--idle SECONDS]
                           [--churn OPS [--churn-gap 0.25]]
Needs valgrind, wrk and nginx (scripts/install-deps.sh).
"""

import argparse
import collections
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers  # noqa: E402
from loopback import free_port, knows_flag  # noqa: E402
from proxy_cost import parse_callgrind, read_callgrind, run_wrk_count  # noqa: E402

POLICIES = ["round_robin", "random", "power_of_two", "cache_aware", "consistent_hash"]
# Counted on request (--policies): the policies that compare a sample of their candidates, and
# manual, whose sticky keys are the requests' x-session-id.
MORE_POLICIES = ["least_load", "prefix_hash", "manual", "bucket"]


def data_misses(path):
    """(first-level, last-level) data cache misses, reads and writes, in a callgrind output
    written with --cache-sim=yes."""
    names = []
    totals = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("summary:") or line.startswith("totals:"):
                totals = [int(v) for v in line.split()[1:]]
    got = dict(zip(names, totals))
    return got.get("D1mr", 0) + got.get("D1mw", 0), got.get("DLmr", 0) + got.get("DLmw", 0)


def counted(proc, tmp, action):
    """Runs `action()` with callgrind's counters of `proc` zeroed before and dumped after;
    returns what `action` returned and the path of the dump."""
    subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
    result = action()
    subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
    dumps = sorted((os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("cg.out")),
                   key=os.path.getmtime)
    return result, dumps[-1]


def request(port, method, path, body=None, timeout=60):
    """(status, body) of one request to the gateway on `port`, a JSON body if given."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def churn_ops(port, spare_urls, ops, gap):
    """Adds `ops` / 2 of `spare_urls` by POST /workers and removes each again by DELETE, one
    operation every `gap` seconds; returns the operations that succeeded."""
    done = 0
    added = []
    for i in range(ops):
        t = time.time()
        if i % 2 == 0:
            status, body = request(port, "POST", "/workers",
                                      {"url": spare_urls[(i // 2) % len(spare_urls)]})
            if status in (200, 201, 202):
                added.append(json.loads(body)["id"])
                done += 1
        elif added:
            status, _ = request(port, "DELETE", f"/workers/{added.pop()}")
            done += status in (200, 202, 204)
        time.sleep(max(0.0, gap - (time.time() - t)))
    return done


def churn_cost(proc, tmp, port, spare_urls, w, args):
    """(instructions per operation, allocations per operation, [(function, its own
    instructions per operation)]) of `args.churn` add/remove operations, less a window as long
    without them; the least of `args.windows` windows of each."""
    def least(action, name):
        best = None
        for _ in range(args.windows):
            t0 = time.time()
            done, dump = counted(proc, tmp, action)
            total, allocs, own = read_callgrind(dump, None)[:3]
            keep = (total, allocs, collections.Counter(dict(own)), done, time.time() - t0)
            if best is None or keep[0] < best[0]:
                best = keep
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(dump, os.path.join(args.keep, name))
        return best

    busy = least(lambda: churn_ops(port, spare_urls, args.churn, args.churn_gap),
                 f"churn-{w}.callgrind")
    quiet = least(lambda: time.sleep(busy[4]) or 0, f"quiet-{w}.callgrind")
    ops = busy[3] or 1
    grew = busy[2]
    grew.subtract(quiet[2])
    top = [(name, ir / ops) for name, ir in grew.most_common(args.top or 15)]
    return (busy[0] - quiet[0]) / ops, (busy[1] - quiet[1]) / ops, top, busy[3]


def measure(binary, policy, urls, args, script, spare_urls=()):
    tmp = tempfile.mkdtemp(prefix="troupe-fleet-cost-")
    out = os.path.join(tmp, "cg.out")
    port = free_port()
    cache = ["--cache-sim=yes"] if args.cache_sim else []
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cache,
           "--compress-strings=no", "--compress-pos=no", binary, "--host", "127.0.0.1",
           "--port", str(port), "--prometheus-port", "0", "--policy", policy,
           "--log-level", args.log_level,
           # Busy polling off: the count is of the requests' work, not of polling between them
           # (a binary from before the flag has none).
           *(["--busy-poll-us", "0"] if knows_flag(binary, "--busy-poll-us") else []),
           # Health checks are background work: 4,000 workers checked every 60 s are 67
           # checks a second, which at valgrind's few dozen requests a second would be most of
           # the count. Registration checks each worker once (with a deadline valgrind's pace
           # cannot miss: a worker failing it would stay unroutable); no later check falls in
           # the run.
           "--health-check-interval-secs", "3600", "--health-check-timeout-secs", "120",
           "--worker-urls", *urls]
    log = open(os.path.join(tmp, "troupe.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        fs.wait_until(lambda: fs.get(port, "/liveness", 5)[0] == 200, 300, "troupe liveness")
        fs.wait_until(lambda: fs.fleet_counts(port)[1] == len(urls), 900, "workers routable")
        # A lap of the fleet and more before counting, so that every worker has its pooled
        # connection (the registration's may have been closed by nginx's 75 s keep-alive
        # timeout while valgrind registered 4,000 workers): the count is of requests, not of
        # connections being opened.
        warm = 0
        while warm < 1.2 * len(urls) or warm == 0:
            warm += run_wrk_count(url, args.concurrency, args.warmup, script)
        # Several windows, the least counted: the inspector asks every worker proxy for its
        # mailbox size every 15 s (O(W) messages, background work like the health checks), and a
        # window it falls in counts it against the few requests valgrind lets through.
        best = None
        for _ in range(args.windows):
            n, dump = counted(
                proc, tmp, lambda: run_wrk_count(url, args.concurrency, args.duration, script))
            total, allocs, top = parse_callgrind(dump, args.top)
            d1, ll = data_misses(dump) if args.cache_sim else (0, 0)
            row = (n, total / n, allocs / n, [(name, ir / n) for name, ir in top], d1 / n, ll / n,
                   total / n)
            if best is None or row[1] < best[1]:
                best = row[:6] + (max(best[6], row[6]) if best else row[6],)
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(dump, os.path.join(args.keep, f"{policy}-{len(urls)}.callgrind"))
            else:
                best = best[:6] + (max(best[6], row[6]),)
        idle = None
        if args.idle:
            # Background work alone: no request in the window, so what it counts is the
            # inspector's refresh (every 15 s: an --idle of 16 holds one) and the timers.
            _, dump = counted(proc, tmp, lambda: time.sleep(args.idle))
            idle = parse_callgrind(dump, args.top)
        churn = churn_cost(proc, tmp, port, spare_urls, len(urls), args) if args.churn else None
        return best + (idle, churn)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--policies", nargs="+", default=POLICIES, choices=POLICIES + MORE_POLICIES)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--windows", type=int, default=3,
                    help="counted windows of --duration s each; the least is reported")
    ap.add_argument("--log-level", default="warn")
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    ap.add_argument("--keep", help="copy the callgrind outputs (POLICY-W.callgrind) here")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also count data cache misses per request (callgrind --cache-sim=yes)")
    ap.add_argument("--idle", type=int, default=0,
                    help="then count an idle window of this many seconds (no requests): the "
                         "background work, the inspector's 15 s refresh among it")
    ap.add_argument("--churn", type=int, default=0,
                    help="then count what N fleet changes cost (N/2 workers added by POST "
                         "/workers, each removed again), per change")
    ap.add_argument("--churn-gap", type=float, default=0.25,
                    help="seconds between two fleet changes of --churn")
    ap.add_argument("--top", type=int, default=0,
                    help="also list the N functions with the most instructions of their own")
    args = ap.parse_args()
    for tool in ("valgrind", "callgrind_control", "wrk"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (scripts/install-deps.sh)")
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    spare = 20 if args.churn else 0
    ports = fs.worker_ports(max(args.workers) + spare)
    workers = FakeWorkers(ports)
    spare_urls = workers.urls[max(args.workers):]
    tmp = tempfile.mkdtemp(prefix="troupe-fleet-cost-lua-")
    script = fs.write_wrk_script(tmp)
    rows = {}
    try:
        for policy in args.policies:
            for w in args.workers:
                t0 = time.time()
                n, ins, allocs, top, d1, ll, most, idle, churn = measure(
                    binary, policy, workers.urls[:w], args, script, spare_urls)
                rows[(policy, w)] = (ins, allocs, d1, ll)
                misses = f", {d1:,.0f} D1 / {ll:,.0f} LL data misses/request" \
                    if args.cache_sim else ""
                print(f"{policy:<15} W={w:<5} c={args.concurrency}: {n} requests, "
                      f"{ins:,.0f} instructions/request, {allocs:.1f} allocations/request"
                      f"{misses}; the most of {args.windows} windows {most:,.0f} "
                      f"({time.time() - t0:.0f} s)", flush=True)
                for name, ir in top:
                    print(f"    {ir:>9,.0f}  {name[:150]}")
                if idle:
                    total, _, idle_top = idle
                    print(f"{policy:<15} W={w:<5} idle {args.idle} s: {total:,} instructions "
                          f"({total / args.idle / 1e6:.2f}M a second)", flush=True)
                    for name, ir in idle_top:
                        print(f"    {ir:>13,}  {name[:150]}")
                if churn:
                    per_op, allocs_op, grew, ops = churn
                    print(f"{policy:<15} W={w:<5} churn: {ops} adds and removes, "
                          f"{per_op:,.0f} instructions and {allocs_op:,.0f} allocations per "
                          f"change; own instructions per change that grew the most:", flush=True)
                    for name, ir in grew:
                        print(f"    {ir:>11,.0f}  {name[:150]}")
    finally:
        workers.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    smallest = min(args.workers)
    print(f"\nratios to W={smallest} of the same policy:")
    extra = f" {'D1 miss/req':>11} {'LL miss/req':>11}" if args.cache_sim else ""
    print(f"{'policy':<15} {'W':>5} {'instr/req':>10} {'x':>6} {'allocs/req':>10}{extra}")
    for policy in args.policies:
        base = rows[(policy, smallest)][0]
        for w in args.workers:
            ins, allocs, d1, ll = rows[(policy, w)]
            extra = f" {d1:>11,.0f} {ll:>11,.0f}" if args.cache_sim else ""
            print(f"{policy:<15} {w:>5} {ins:>10,.0f} {ins / base:>6.2f} {allocs:>10.1f}{extra}")


if __name__ == "__main__":
    main()
