#!/usr/bin/env python3
"""What the admin views cost the gateway with W workers registered: the gateway's CPU time (user
+ system, from /proc) and the answer's size per `GET /admin/actors` (every long-lived actor, or
the first 100 as the admin page asks) and `/admin/workers` (whole, and the 200 the page asks
for). An admin page left open refreshes every 2 s; at 4,000 workers what one refresh costs is
CPU the requests do not get.

The fleet is bench/fake_worker.py's nginx on W loopback ports, registered by --worker-urls (as
in fleet_scale.py). Each view is fetched --calls times in a row; the CPU time per call is the
gateway's over all of them divided by their number.

Usage: bench/admin_cost.py [--workers 4 4000] [--calls 5] [--build build]
(CPU time is read in clock ticks of 10 ms: --calls 10 resolves 1 ms a call.)
Needs nginx (scripts/install-deps.sh).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers  # noqa: E402

VIEWS = ["/admin/actors", "/admin/actors?limit=100", "/admin/workers", "/admin/workers?limit=200"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    args = ap.parse_args()
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    workers = FakeWorkers(fs.worker_ports(max(args.workers)))
    print(f"{'W':>5}  {'view':<26} {'CPU ms/call':>11} {'KB/answer':>9}")
    try:
        for w in args.workers:
            gw = fs.Gateway(binary, "round_robin", workers.urls[:w], "flag", 0, "warn",
                            ["--health-check-interval-secs", "3600"])
            try:
                for path in VIEWS:
                    fs.get(gw.port, path, timeout=120)  # once unmeasured: first-touch costs
                    before = fs.cpu_seconds(gw.proc.pid)
                    size = 0
                    for _ in range(args.calls):
                        status, body = fs.get(gw.port, path, timeout=120)
                        if status != 200:
                            raise RuntimeError(f"GET {path}: {status}")
                        size = len(body)
                    ms = (fs.cpu_seconds(gw.proc.pid) - before) * 1000 / args.calls
                    print(f"{w:>5}  {path:<26} {ms:>11.2f} {size / 1024:>9.1f}", flush=True)
            finally:
                gw.stop()
    finally:
        workers.stop()


if __name__ == "__main__":
    main()
