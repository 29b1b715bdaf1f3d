#!/usr/bin/env python3
"""Is the fake fleet itself slower with many workers? The load generator (troupe-bench, fixed
concurrency, non-streamed chats) straight to the W loopback ports of the fake fleet (one nginx,
bench/fake_worker.py), round robin over them as a gateway would, against the same through troupe
(round_robin, the W workers by flag), for each W: every W and path once per round (interleaved),
medians over rounds. It also counts the TCP connections opened during each measured run
(Tcp ActiveOpens of /proc/net/snmp, machine-wide: upstream connections the gateway or the
generator had to open, i.e. not reused), and the gateway's CPU time per request.

The generator runs on --client-cpu, nginx on --fleet-cpu, the gateway on --gateway-cpu.

Usage: bench/fleet_direct.py [--workers 4 4000] [--rounds 3] [--duration 3] [--concurrency 64]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from fake_worker import FakeWorkers
from fleet_scale import ROOT, Gateway, cpu_seconds, worker_ports


def active_opens():
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("ActiveOpens")])


def troupe_bench(build, urls, conc, duration, warmup, cpu):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = ["taskset", "-c", cpu, os.path.join(build, "apps", "troupe-bench", "troupe-bench"),
               "--url", ",".join(urls), "--model", "m", "--progress", "off", "--json", out,
               "--concurrency", str(conc), "--duration", str(warmup + duration), "--warmup", str(warmup),
               "--max-tokens", "8", "--no-stream"]
        opens = active_opens()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        opens = active_opens() - opens
        if p.returncode != 0:
            raise RuntimeError(f"troupe-bench failed ({p.returncode}): {p.stderr[-2000:]}")
        with open(out) as f:
            st = json.load(f)["stages"][0]
        return {"rps": st["throughput"]["requests_per_s"], "p50_ms": st["e2e_ms"]["p50"],
                "p99_ms": st["e2e_ms"]["p99"], "failed": st["failed"], "requests": st["requests"],
                "all_requests": st["requests"] + st["warmup_requests"],
                "opens": opens}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=None, help="default 1 + W/1000 s")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--policy", default="round_robin")
    ap.add_argument("--gateway-cpu", default="0")
    ap.add_argument("--client-cpu", default="0")
    ap.add_argument("--fleet-cpu", default="1")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()

    ports = worker_ports(max(args.workers))
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    fleet = FakeWorkers(ports, prefix=["taskset", "-c", args.fleet_cpu])
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    rows = []
    try:
        for rnd in range(args.rounds):
            for w in args.workers:
                warmup = args.warmup if args.warmup is not None else 1 + w // 1000
                d = troupe_bench(args.build, urls[:w], args.concurrency, args.duration, warmup,
                                 args.client_cpu)
                rows.append({"round": rnd, "workers": w, "path": "direct", **d})
                print(f"round {rnd + 1} W={w:<5} direct   {d['rps']:8.0f} req/s p50 "
                      f"{d['p50_ms']:.3f} ms, {d['opens']} connects, {d['failed']} failed",
                      flush=True)
                gw = Gateway(binary, args.policy, urls[:w], "flag", args.gateway_cpu, "warn")
                try:
                    client_cpu = "1" if args.client_cpu == args.gateway_cpu else args.client_cpu
                    cpu0 = cpu_seconds(gw.proc.pid)
                    g = troupe_bench(args.build, [f"http://127.0.0.1:{gw.port}"],
                                     args.concurrency, args.duration, warmup, client_cpu)
                    g["cpu_us"] = (cpu_seconds(gw.proc.pid) - cpu0) * 1e6 / max(g["all_requests"], 1)
                finally:
                    gw.stop()
                rows.append({"round": rnd, "workers": w, "path": "troupe", **g})
                print(f"round {rnd + 1} W={w:<5} troupe   {g['rps']:8.0f} req/s p50 "
                      f"{g['p50_ms']:.3f} ms, {g['opens']} connects, {g['failed']} failed, "
                      f"gateway cpu {g['cpu_us']:.1f} us/req (over warm-up and run)", flush=True)
    finally:
        fleet.stop()
    small = min(args.workers)
    print(f"\nmedians over {args.rounds} rounds (ratio: to W={small}, same path and round)")
    for path in ("direct", "troupe"):
        for w in args.workers:
            rs = [r for r in rows if r["path"] == path and r["workers"] == w]
            base = {r["round"]: r for r in rows if r["path"] == path and r["workers"] == small}
            med = lambda f: statistics.median(f(r) for r in rs)
            print(f"{path:<7} W={w:<5} {med(lambda r: r['rps']):8.0f} req/s "
                  f"x{med(lambda r: r['rps'] / base[r['round']]['rps']):.2f}  p50 "
                  f"{med(lambda r: r['p50_ms']):.3f} ms  connects {med(lambda r: r['opens']):.0f}"
                  + (f"  gateway cpu {med(lambda r: r['cpu_us']):.1f} us/req" if path == "troupe"
                     else ""))


if __name__ == "__main__":
    sys.exit(main())
