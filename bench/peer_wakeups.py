#!/usr/bin/env python3
"""How often a proxy makes its peers sleep and wake: per 100 requests, the voluntary context
switches (a thread blocking, in epoll_wait or a read, until woken) and involuntary ones (a
thread preempted) of the proxy, of the fake fleet behind it (nginx, bench/fake_worker.py) and
of wrk in front of it, for HAProxy, nginx and troupe in front of the same W fake workers (the
set-up of bench/fleet_proxies.py: the proxy pinned to CPU 0, the fleet and wrk to CPU 1).

A peer that finds nothing to do blocks, and the proxy's next send to it wakes it: on a VM that
halts an idle vCPU at once, an exit to the hypervisor on both sides, paid inside the proxy's
`sendmsg` (`_raw_spin_unlock_irqrestore` in a profile). A proxy whose sends to one peer come
in bursts wakes it once per burst; one whose sends are spread over its pass wakes it more often.

Usage: bench/peer_wakeups.py [--workers 4 4000] [--rounds 2] [--duration 3] [--concurrency 64]
           [--proxies haproxy nginx troupe] [--troupe-flag=--busy-poll-us=0]
Needs wrk, nginx, haproxy and taskset (scripts/install-deps.sh).
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_proxies as fp  # noqa: E402
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers  # noqa: E402


def switches(pids):
    """(voluntary, involuntary) context switches of every thread of `pids` so far."""
    vol = invol = 0
    for pid in pids:
        for status in glob.glob(f"/proc/{pid}/task/*/status"):
            try:
                with open(status) as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches"):
                            vol += int(line.split()[1])
                        elif line.startswith("nonvoluntary_ctxt_switches"):
                            invol += int(line.split()[1])
            except OSError:
                pass  # a thread that ended
    return vol, invol


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class TroupeProxy:
    def __init__(self, binary, urls, flags):
        self.gateway = fs.Gateway(binary, "round_robin", urls, "flag", 0, "warn", flags)
        self.port, self.pid = self.gateway.port, self.gateway.proc.pid

    def stop(self):
        self.gateway.stop()


def measure(port, proxy_pid, fleet_pids, conc, duration, script):
    """Runs wrk at `conc` for `duration` s; switches per 100 requests of proxy, fleet, wrk."""
    fs.run_wrk(port, conc, 1, script, "1")  # warm-up: connections open, caches warm
    threads = 1 if conc == 1 else 2
    proxy0, fleet0 = switches([proxy_pid]), switches(fleet_pids)
    wrk = subprocess.Popen(["taskset", "-c", "1", "wrk", "-t", str(threads), "-c", str(conc),
                            "-d", f"{duration:g}s", "--latency", "-s", script,
                            f"http://127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True)
    # wrk's own threads exist once it runs; its start-up and end are left out, counted for
    # the middle of the run and scaled to the whole.
    time.sleep(0.2)
    wrk0, t0 = switches([wrk.pid]), time.time()
    time.sleep(max(duration - 0.5, 0.1))
    wrk1, t1 = switches([wrk.pid]), time.time()
    out = wrk.communicate()[0]
    proxy1, fleet1 = switches([proxy_pid]), switches(fleet_pids)
    res = fs.parse_wrk(out)
    n = max(res["requests"], 1)
    scale = duration / (t1 - t0)
    per100 = lambda a, b, k=1.0: [100 * k * (y - x) / n for x, y in zip(a, b)]  # noqa: E731
    res["proxy_sw"] = per100(proxy0, proxy1)
    res["fleet_sw"] = per100(fleet0, fleet1)
    res["wrk_sw"] = per100(wrk0, wrk1, scale)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--proxies", nargs="+", default=["haproxy", "troupe"],
                    choices=["nginx", "haproxy", "troupe"])
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    ap.add_argument("--troupe-flag", action="append", default=[],
                    help="extra flag for troupe (repeatable), e.g. --troupe-flag=--busy-poll-us=0")
    args = ap.parse_args()
    for tool in ("wrk", "taskset", "nginx"):
        if not fp.program(tool):
            sys.exit(f"needs {tool} (scripts/install-deps.sh)")
    proxies = [p for p in args.proxies if fp.available(p)]
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    tmp = tempfile.mkdtemp(prefix="troupe-peer-wakeups-")
    script = fs.write_wrk_script(tmp)
    ports = fs.worker_ports(max(args.workers))
    workers = FakeWorkers(ports, prefix=["taskset", "-c", "1"])
    fleet_pids = [workers.proc.pid, *children(workers.proc.pid)]
    rows = []
    try:
        for rnd in range(args.rounds):
            for w in args.workers:
                for proxy in proxies:
                    if proxy == "nginx":
                        p = fp.NginxProxy(ports[:w], 0)
                    elif proxy == "haproxy":
                        p = fp.HAProxy(ports[:w], 0)
                    else:
                        p = TroupeProxy(binary, workers.urls[:w], args.troupe_flag)
                    try:
                        r = measure(p.port, p.pid, fleet_pids, args.concurrency, args.duration,
                                    script)
                    finally:
                        p.stop()
                    r.update(round=rnd, workers=w, proxy=proxy)
                    rows.append(r)
                    print(f"round {rnd + 1} {proxy:<8} W={w:<5} {r['rps']:8.0f} req/s | per 100 "
                          f"requests, voluntary/involuntary: proxy {r['proxy_sw'][0]:5.1f} "
                          f"{r['proxy_sw'][1]:4.1f}  fleet {r['fleet_sw'][0]:5.1f} {r['fleet_sw'][1]:4.1f}"
                          f"  wrk {r['wrk_sw'][0]:5.1f} {r['wrk_sw'][1]:4.1f}", flush=True)
        med = statistics.median
        print(f"\nmedians over rounds, c={args.concurrency}; context switches per 100 requests "
              "(voluntary: blocked until woken; involuntary: preempted)")
        print(f"{'proxy':<9}{'W':>6}{'req/s':>9}{'proxy v':>9}{'inv':>6}{'fleet v':>9}{'inv':>6}"
              f"{'wrk v':>8}{'inv':>6}")
        for w in args.workers:
            for proxy in proxies:
                mine = [r for r in rows if r["proxy"] == proxy and r["workers"] == w]
                cols = [med(r[k][i] for r in mine) for k in ("proxy_sw", "fleet_sw", "wrk_sw")
                        for i in (0, 1)]
                print(f"{proxy:<9}{w:>6}{med(r['rps'] for r in mine):>9.0f}"
                      f"{cols[0]:>9.1f}{cols[1]:>6.1f}{cols[2]:>9.1f}{cols[3]:>6.1f}"
                      f"{cols[4]:>8.1f}{cols[5]:>6.1f}")
    finally:
        workers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
