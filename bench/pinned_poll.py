#!/usr/bin/env python3
"""Busy polling on dedicated CPUs while the rest of the machine is busy: the gateway pinned to
--gateway-cpu, the fake worker and wrk on --load-cpus, and beside them --hogs busy loops at nice
19 on the load CPUs (batch work on the other cores of a shared host: they take little from wrk
and the worker, and each counts as a runnable thread in /proc/loadavg).

An io thread polls for work before it sleeps, unless another thread waits for a CPU
(transport/io_loop.hpp, `cpu_contention`). Asked machine-wide (/proc/loadavg's runnable count
above the online CPUs), the hogs veto every poll of a gateway whose own CPU is free, and each
request then pays the wake-up of a halted CPU; a thread pinned to some of the CPUs asks whether
its own CPU was taken instead (its involuntary context switches). With --builds A B the two
builds run side by side, interleaved per round, e.g. the build before that change and after.

Per build and concurrency: requests/s, p50 and p99 latency, the gateway's CPU per request and
its busy-poll vetoes per request (`troupe_io_busy_poll_vetoes_total`), medians over rounds.

Usage: bench/pinned_poll.py [--builds build /tmp/before] [--hogs 2] [--workers 4]
                            [--rounds 3] [--duration 4] [--concurrency 1 64]
Needs wrk, nginx and taskset (scripts/install-deps.sh).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers  # noqa: E402
from loopback import free_port  # noqa: E402


def vetoes(metrics_port):
    """The gateway's busy-poll vetoes so far."""
    status, body = fs.get(metrics_port, "/metrics")
    if status != 200:
        return 0.0
    m = re.search(rb"^troupe_io_busy_poll_vetoes_total ([0-9.e+]+)$", body, re.M)
    return float(m.group(1)) if m else 0.0


def run_build(binary, urls, args, script):
    """{concurrency: wrk's figures plus vetoes per request} of one gateway of `binary`."""
    metrics_port = free_port()
    gw = fs.Gateway(binary, "round_robin", urls, "flag", args.gateway_cpu, "warn",
                    metrics_port=metrics_port)
    try:
        fs.run_wrk(gw.port, 64, 2, script, args.load_cpus)  # warm-up
        out = {}
        for c in args.concurrency:
            before = vetoes(metrics_port)
            res = fs.run_wrk(gw.port, c, args.duration, script, args.load_cpus, gw.proc.pid)
            res["vetoes"] = (vetoes(metrics_port) - before) / max(res["requests"], 1)
            out[c] = res
        return out
    finally:
        gw.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", nargs="+", default=[os.path.join(fs.ROOT, "build")])
    ap.add_argument("--hogs", type=int, default=2,
                    help="busy loops at nice 19 on the load CPUs (0: none)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--gateway-cpu", default="0")
    ap.add_argument("--load-cpus", default="1")
    args = ap.parse_args()
    for tool in ("wrk", "taskset", "nginx"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"{tool} is missing: run scripts/install-deps.sh")
    ports = fs.worker_ports(args.workers)
    workers = FakeWorkers(ports, prefix=["taskset", "-c", args.load_cpus])
    hogs = [subprocess.Popen(["taskset", "-c", args.load_cpus, "nice", "-n", "19", sys.executable,
                              "-c", "while True: pass"]) for _ in range(args.hogs)]
    tmp = tempfile.mkdtemp(prefix="troupe-pinned-poll-")
    script = fs.write_wrk_script(tmp)
    rows = {}
    try:
        for rnd in range(args.rounds):
            for build in args.builds:
                binary = os.path.join(build, "apps", "troupe", "troupe")
                for c, res in run_build(binary, workers.urls, args, script).items():
                    rows.setdefault((build, c), []).append(res)
                    print(f"round {rnd + 1} {build:<24} c={c:<3} {res['rps']:9.0f} req/s "
                          f"p50 {res['p50_ms']:.3f} p99 {res['p99_ms']:.3f} ms "
                          f"cpu {res.get('cpu_us', 0):5.1f} us/req vetoes/req {res['vetoes']:.4f}",
                          flush=True)
    finally:
        for h in hogs:
            h.kill()
        workers.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nmedians over {args.rounds} rounds ({args.hogs} hogs at nice 19 on CPUs "
          f"{args.load_cpus}, the gateway on CPU {args.gateway_cpu}):")
    print(f"{'build':<24} {'c':>3} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'cpu us':>7} "
          f"{'vetoes/req':>10}")
    for (build, c), runs in rows.items():
        med = {k: statistics.median(r.get(k, 0) for r in runs)
               for k in ("rps", "p50_ms", "p99_ms", "cpu_us", "vetoes")}
        print(f"{build:<24} {c:>3} {med['rps']:>9.0f} {med['p50_ms']:>7.3f} {med['p99_ms']:>7.3f} "
              f"{med['cpu_us']:>7.1f} {med['vetoes']:>10.4f}")


if __name__ == "__main__":
    main()
