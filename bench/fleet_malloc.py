#!/usr/bin/env python3
"""The allocator's share of what a request costs with many workers: the same troupe binary with
glibc's defaults, with a larger per-size cache (GLIBC_TUNABLES=glibc.malloc.tcache_count=1024)
and with jemalloc preloaded (what linking it, troupe's default build, does), at W=4 and W=4000 workers (one nginx on W loopback ports, bench/fake_worker.py), wrk at c=64 after
a warm-up; every size and variant once per round, medians over rounds. Prints req/s and the
gateway's CPU time per request. The gateway is pinned to core 0, nginx and wrk to core 1.

Usage: bench/fleet_malloc.py [--rounds 3] [--build build-glibc] [--policy round_robin]
The build must use glibc's malloc (configured with -DTROUPE_JEMALLOC=OFF), or every variant is
jemalloc: the script refuses a binary that links it.
"""

import argparse
import os
import statistics
import subprocess
import tempfile

from fake_worker import FakeWorkers
import fleet_scale as fs

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
# name: (environment variable, value) the gateway is started with; none for glibc's defaults.
VARIANTS = {"default": None,
            "tcache_count=1024": ("GLIBC_TUNABLES", "glibc.malloc.tcache_count=1024"),
            "jemalloc": ("LD_PRELOAD", JEMALLOC)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--policy", default="round_robin")
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    args = ap.parse_args()
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    if "libjemalloc" in subprocess.run(["ldd", binary], capture_output=True, text=True).stdout:
        raise SystemExit(f"{binary} links jemalloc: build one with -DTROUPE_JEMALLOC=OFF "
                         "(e.g. BUILD_DIR=build-glibc and cmake -DTROUPE_JEMALLOC=OFF) to compare")
    ports = fs.worker_ports(max(args.workers))
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    workers = FakeWorkers(ports, prefix=["taskset", "-c", "1"])
    tmp = tempfile.mkdtemp()
    script = fs.write_wrk_script(tmp)
    res = {}
    try:
        for rnd in range(args.rounds):
            for w in args.workers:
                for name, tunable in VARIANTS.items():
                    # The Gateway inherits the environment (os.environ's writes reach it).
                    if tunable:
                        os.environ[tunable[0]] = tunable[1]
                    try:
                        gw = fs.Gateway(binary, args.policy, urls[:w], "flag", "0", "warn")
                    finally:
                        if tunable:
                            os.environ.pop(tunable[0], None)
                    try:
                        fs.run_wrk(gw.port, 64, 1 + w // 500, script, "1")
                        r = fs.run_wrk(gw.port, 64, 3, script, "1", gw.proc.pid)
                    finally:
                        gw.stop()
                    res.setdefault((w, name), []).append(r)
                    print(f"round {rnd + 1} W={w:<5} {name:<18} {r['rps']:8.0f} req/s "
                          f"{r['cpu_us']:6.1f} us/req", flush=True)
    finally:
        workers.stop()
    print(f"\nmedians over {args.rounds} rounds:")
    for (w, name), rs in res.items():
        print(f"W={w:<5} {name:<18} {statistics.median(r['rps'] for r in rs):8.0f} req/s "
              f"{statistics.median(r['cpu_us'] for r in rs):6.1f} us/req")


if __name__ == "__main__":
    main()
