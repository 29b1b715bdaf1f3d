#!/usr/bin/env python3
"""Whether a fleet's health checks come in waves: W workers registered at once by --worker-urls
(bench/fake_worker.py's nginx on W loopback ports), checked every --interval seconds, with and
without --health-check-jitter-factor, in interleaved rounds. Per run it reads the gateway's CPU
time in 100 ms windows while no request runs (after --settle seconds, so registration is over):
a wave of W checks at once shows as windows where the io thread is busy most of the 100 ms;
spread checks as many small ones. Then a wrk run at --concurrency over the same span reports
p99 and max latency (what requests that meet a wave wait).

Usage: bench/health_waves.py [--workers 4000] [--interval 5] [--jitter 0 10] (percent) [--rounds 2]
                             [--window 15] [--settle 10] [--concurrency 64] [--build build]
Needs wrk and nginx (scripts/install-deps.sh).
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers  # noqa: E402


def one_run(binary, urls, args, jitter, script):
    gw = fs.Gateway(binary, "round_robin", urls, "flag", args.gateway_cpu, "warn",
                    ["--health-check-interval-secs", str(args.interval),
                     "--health-check-jitter-factor", str(jitter / 100)])
    try:
        time.sleep(args.settle)
        windows = []
        t0 = time.time()
        prev = fs.cpu_seconds(gw.proc.pid)
        while time.time() - t0 < args.window:
            time.sleep(0.1)
            now = fs.cpu_seconds(gw.proc.pid)
            windows.append(now - prev)
            prev = now
        windows.sort(reverse=True)
        res = fs.run_wrk(gw.port, args.concurrency, args.window, script, args.load_cpus)
        return {"cpu_s": sum(windows), "top": windows[:5],
                "busy_windows": sum(1 for w in windows if w >= 0.05), "rps": res["rps"],
                "p99_ms": res["p99_ms"], "max_ms": res["max_ms"]}
    finally:
        gw.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4000)
    ap.add_argument("--interval", type=float, default=5.0,
                    help="--health-check-interval-secs (short, so a window holds several)")
    ap.add_argument("--jitter", type=int, nargs="+", default=[0, 10])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--window", type=int, default=15, help="seconds idle, then as long loaded")
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--gateway-cpu", default="0")
    ap.add_argument("--load-cpus", default="1")
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    args = ap.parse_args()
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    fleet = FakeWorkers(fs.worker_ports(args.workers), prefix=["taskset", "-c", args.load_cpus])
    script = fs.write_wrk_script(tempfile.mkdtemp(prefix="troupe-health-waves-"))
    try:
        for r in range(1, args.rounds + 1):
            for j in args.jitter:
                res = one_run(binary, fleet.urls, args, j, script)
                top = " ".join(f"{w * 1000:.0f}" for w in res["top"])
                print(f"round {r} jitter {j:>2}%  idle {args.window}s: cpu {res['cpu_s']:.2f} s, "
                      f"busiest 100 ms windows {top} ms, windows >= 50 ms: {res['busy_windows']}"
                      f" | c={args.concurrency} {res['rps']:.0f} req/s p99 {res['p99_ms']:.2f} ms "
                      f"max {res['max_ms']:.2f} ms", flush=True)
    finally:
        fleet.stop()


if __name__ == "__main__":
    main()
