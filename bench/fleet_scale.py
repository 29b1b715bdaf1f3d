#!/usr/bin/env python3
"""Fleet-size benchmark: what a request costs the gateway with W workers registered.

One nginx answers on W loopback ports as W workers (a canned chat completion, /v1/models and
/health); troupe runs in front with all W registered (by --worker-urls or by POST /workers), and
wrk sends chat requests at concurrency 1 and 64. For every fleet size and policy, in rounds
(interleaved: every size and policy once per round; medians over rounds), it records requests/s,
p50 and p99, the ratio to the smallest fleet of the same round, the time to register the fleet
(until listed, and until every worker is routable), and the gateway's RSS per worker. With
--churn R, each measurement is repeated while a thread adds and removes workers at R operations
per second (half adds, half removes), counting requests that failed. It also records the
gateway's CPU time per request (user + system, /proc): on a shared machine requests/s follows
what the neighbours leave of the cores, CPU per request much less; and the TCP segments the
machine sent per request (4 when every ACK rides on data). With --profile N, the gateway is
sampled (`perf record`, user and kernel) during each run at --profile-concurrency (default 64)
and its N costliest functions listed in µs per request.

The gateway is pinned to --gateway-cpu, nginx, wrk and the churn client to --load-cpus
(taskset; the churn thread by its own affinity), as the issue's measurements were.

With --register-only it measures registration alone (no load): time until listed and until
routable, and RSS per worker, for each way of registering given (--register flag post) and for
each build given (--builds build /tmp/base: before/after in one run, interleaved per round);
with --settle S also the RSS per worker S seconds later, once the allocator has returned what
the registration's burst freed (jemalloc decays freed pages over 10 s).

Usage: bench/fleet_scale.py [--workers 4 500 2000 4000] [--policies round_robin ...]
           [--rounds 3] [--duration 5] [--warmup S] [--concurrency 1 64] [--register flag|post]
           [--churn 50] [--build build] [--builds b1 b2] [--register-only [--settle S]]
           [--json out.json]
           [--profile N]
Needs wrk, nginx and taskset (scripts/install-deps.sh); perf for --profile.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from fake_worker import FakeWorkers
from loopback import cpu_times, free_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Each request carries a session key (x-session-id, for consistent_hash) that also starts
# its prompt (for cache_aware): 1000 sessions, cycled.
WRK_LUA = r"""
local n = 0
local prompt = string.rep("The quick brown fox jumps over the lazy dog. ", 20)
request = function()
  n = n + 1
  local key = "s" .. (n % 1000)
  local body = '{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"' ..
               key .. ' ' .. prompt .. '"}]}'
  return wrk.format("POST", "/v1/chat/completions",
                    {["Content-Type"] = "application/json", ["x-session-id"] = key}, body)
end
"""

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def write_wrk_script(directory):
    """Writes the requests' wrk script (WRK_LUA) into `directory`; returns its path."""
    path = os.path.join(directory, "chat.lua")
    with open(path, "w") as f:
        f.write(WRK_LUA)
    return path


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def worker_ports(count, start=20000):
    """`count` free ports below the ephemeral range (no outgoing connection takes them)."""
    ports = []
    p = start
    while len(ports) < count:
        if p >= 32768:
            sys.exit("not enough free ports below 32768")
        if port_free(p):
            ports.append(p)
        p += 1
    return ports


def get(port, path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = pred()
            if v:
                return v
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def fleet_counts(port):
    status, body = get(port, "/workers", timeout=30)
    if status != 200:
        return 0, 0
    workers = json.loads(body)["workers"]
    return len(workers), sum(1 for w in workers if w.get("routable"))


class Gateway:
    """troupe pinned to a core, its fleet registered by flag or by POST."""

    def __init__(self, binary, policy, urls, register, cpu, log_level, flags=(), metrics_port=0):
        """`flags`: more of troupe's flags, e.g. ["--send-batch", "0"]; `metrics_port`: where
        its /metrics answers (0: nowhere)."""
        self.port = free_port()
        args = ["taskset", "-c", str(cpu), binary, "--host", "127.0.0.1", "--port",
                str(self.port), "--prometheus-port", str(metrics_port), "--policy", policy,
                "--log-level", log_level, *flags]
        if register == "flag" and urls:
            args += ["--worker-urls", *urls]
        t0 = time.time()
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: get(self.port, "/liveness", 1)[0] == 200, 30, "troupe liveness")
        self.rss_empty = rss_mb(self.proc.pid) if register == "post" else None
        if register == "post":
            t0 = time.time()
            self.post_all(urls)
        self.listed_s = time.time() - t0
        wait_until(lambda: fleet_counts(self.port)[0] == len(urls), 120, "workers listed")
        self.listed_s = time.time() - t0
        wait_until(lambda: fleet_counts(self.port)[1] == len(urls), 300, "workers routable")
        self.routable_s = time.time() - t0
        self.rss = rss_mb(self.proc.pid)

    def post_all(self, urls):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            for u in urls:
                c.request("POST", "/workers", body=json.dumps({"url": u}),
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status not in (200, 201, 202):
                    raise RuntimeError(f"POST /workers {u}: {r.status}")
        finally:
            c.close()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Churn(threading.Thread):
    """Adds and removes workers at `rate` operations per second until stopped."""

    def __init__(self, port, spare_urls, rate, cpus=None):
        super().__init__(daemon=True)
        self.port, self.spare, self.rate = port, list(spare_urls), rate
        self.cpus = cpus
        self.stop_flag = threading.Event()
        self.ops = 0
        self.failed = 0

    def run(self):
        if self.cpus:
            # The churn client is load, like wrk: on the load CPUs, not preempting the gateway
            # on its own (os.sched_setaffinity(0, ...) pins the calling thread only).
            os.sched_setaffinity(0, self.cpus)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        added = []  # ids of the workers this thread added, oldest first
        spare = list(self.spare)
        interval = 1.0 / self.rate
        next_at = time.time()
        while not self.stop_flag.is_set():
            try:
                if added and (len(added) >= len(self.spare) // 2 or self.ops % 2):
                    wid, url = added.pop(0)
                    c.request("DELETE", f"/workers/{wid}")
                    r = c.getresponse()
                    r.read()
                    spare.append(url)
                    ok = r.status in (200, 202, 204)
                else:
                    url = spare.pop(0)
                    c.request("POST", "/workers", body=json.dumps({"url": url}),
                              headers={"Content-Type": "application/json"})
                    r = c.getresponse()
                    body = r.read()
                    ok = r.status in (200, 201, 202)
                    if ok:
                        added.append((json.loads(body)["id"], url))
                    else:
                        spare.append(url)
                self.ops += 1
                self.failed += 0 if ok else 1
            except (OSError, http.client.HTTPException):
                self.failed += 1
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            next_at += interval
            delay = next_at - time.time()
            if delay > 0:
                self.stop_flag.wait(delay)
        c.close()


def cpu_list(spec):
    """The CPUs of a taskset list such as "1" or "1-3,5"."""
    cpus = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def cpu_seconds(pid):
    """User + system CPU time of process `pid` (all its threads), in seconds."""
    return sum(cpu_times(pid))


def tcp_out_segments():
    """TCP segments sent by this machine so far (/proc/net/snmp's Tcp OutSegs): on loopback, a
    request through the gateway is four (two requests, two answers) when every ACK rides on
    data."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("OutSegs")])


def wakeup_counters():
    """This machine's context switches (/proc/stat `ctxt`) and rescheduling interrupts (the
    `RES` row of /proc/interrupts, summed over CPUs: a wake-up sent to another CPU) so far. On
    a VM a rescheduling interrupt to a halted vCPU is an exit to the hypervisor on both sides."""
    with open("/proc/stat") as f:
        ctxt = next(int(line.split()[1]) for line in f if line.startswith("ctxt "))
    res = 0
    with open("/proc/interrupts") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "RES:":
                res = sum(int(x) for x in parts[1:] if x.isdigit())
    return ctxt, res


def parse_wrk(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    lat = {}
    for pct, val, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        lat[pct] = float(val) * UNITS[unit]
    # The Latency row: average, standard deviation, max.
    latency_max = re.search(r"^\s+Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\s", out, re.M)
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                              out)
    return {"rps": rps, "requests": total, "p50_ms": lat.get("50"), "p99_ms": lat.get("99"),
            "max_ms": float(latency_max.group(1)) * UNITS[latency_max.group(2)]
            if latency_max else None,
            "non2xx": int(errors.group(1)) if errors else 0,
            "socket_errors": sum(int(x) for x in socket_errors.groups()) if socket_errors else 0}


def run_wrk(port, conc, duration, script, cpus, pid=None, profile=None):
    """wrk's figures; with the gateway's `pid`, also the gateway's CPU time per request (µs):
    on a shared machine throughput follows what the neighbours leave, CPU per request less so.
    With `profile` (a file name), the gateway is sampled meanwhile (`perf record`, user and
    kernel)."""
    threads = 1 if conc == 1 else 2
    cmd = ["taskset", "-c", cpus, "wrk", "-t", str(threads), "-c", str(conc),
           "-d", f"{duration}s", "--latency", "-s", script, f"http://127.0.0.1:{port}"]
    cpu0 = cpu_times(pid) if pid else (0, 0)
    segs0 = tcp_out_segments()
    wake0 = wakeup_counters()
    perf = None
    if profile and pid:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-p",
                                 str(pid), "-o", profile], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    res = parse_wrk(out)
    res["segments"] = (tcp_out_segments() - segs0) / max(res["requests"], 1)
    ctxt, resched = (b - a for a, b in zip(wake0, wakeup_counters()))
    res["ctxt"] = ctxt / max(res["requests"], 1)  # context switches per request, machine-wide
    res["ipi"] = resched / max(res["requests"], 1)  # rescheduling interrupts per request
    if pid:
        user, system = (b - a for a, b in zip(cpu0, cpu_times(pid)))
        n = max(res["requests"], 1)
        res["cpu_us"] = (user + system) * 1e6 / n
        res["sys_us"] = system * 1e6 / n  # of which in the kernel
    return res


def profile_top(data, requests, top):
    """The `top` symbols of a `perf record` file by samples, as µs per request (a sample is
    1/4999 s of CPU), kernel symbols marked [k]."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "-n", "--sort", "sym",
                          "--percent-limit", "0.3"], capture_output=True, text=True).stdout
    rows = []
    for m in re.finditer(r"^\s+[\d.]+%\s+(\d+)\s+\[([k.])\]\s+(.+?)\s*$", out, re.M):
        us = int(m.group(1)) / 4999 * 1e6 / max(requests, 1)
        rows.append((us, ("[k] " if m.group(2) == "k" else "") + m.group(3)[:90]))
    return rows[:top]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 500, 2000, 4000])
    ap.add_argument("--policies", nargs="+",
                    default=["round_robin", "random", "power_of_two", "cache_aware",
                             "consistent_hash"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--register", choices=["flag", "post"], nargs="+", default=["flag"])
    ap.add_argument("--settle", type=float, default=0, metavar="S",
                    help="--register-only: also the RSS per worker S seconds after routable")
    ap.add_argument("--register-only", action="store_true",
                    help="measure registration time and memory only (no load)")
    ap.add_argument("--churn", type=float, default=0,
                    help="also measure while adding/removing this many workers per second")
    ap.add_argument("--warmup", type=int, default=None,
                    help="seconds of load before measuring (default 1 + W/500)")
    ap.add_argument("--gateway-cpu", default="0")
    ap.add_argument("--load-cpus", default="1")
    ap.add_argument("--log-level", default="warn")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--builds", nargs="+",
                    help="several build directories, each measured in every round")
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--profile-concurrency", type=int, default=64, metavar="C",
                    help="the concurrency whose runs --profile samples (default 64)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="sample the gateway (perf record) during each c=64 run and list its N "
                         "costliest functions, user and kernel, in µs per request")
    args = ap.parse_args()

    for tool in ("wrk", "taskset") + (("perf",) if args.profile else ()):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: run scripts/install-deps.sh")
    builds = args.builds or [args.build]
    if args.register_only:
        return register_only(args, builds)
    if len(args.register) > 1:
        sys.exit("several --register modes: with --register-only only")
    args.register = args.register[0]
    args.builds = builds
    spare_count = 200 if args.churn else 0
    ports = worker_ports(max(args.workers) + spare_count)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    spare_urls = urls[max(args.workers):]

    workers = None
    results = []
    tmp = tempfile.mkdtemp(prefix="troupe-fleet-")
    try:
        workers = FakeWorkers(ports, prefix=["taskset", "-c", args.load_cpus])
        script = write_wrk_script(tmp)

        for rnd in range(args.rounds):
            for policy, w, build in [(p, w, b) for p in args.policies for w in args.workers
                                     for b in builds]:
                troupe_bin = os.path.join(build, "apps", "troupe", "troupe")
                gw = Gateway(troupe_bin, policy, urls[:w], args.register, args.gateway_cpu,
                             args.log_level)
                try:
                    # Warm-up: long enough that every worker has its upstream connections
                    # open (a lap of the fleet and more); the steady state is measured.
                    warmup = args.warmup if args.warmup is not None else 1 + w // 500
                    run_wrk(gw.port, 64, warmup, script, args.load_cpus)
                    row = {"round": rnd + 1, "policy": policy, "workers": w, "build": build,
                           "register": args.register, "listed_s": gw.listed_s,
                           "routable_s": gw.routable_s, "rss_mb": gw.rss,
                           "rss_empty_mb": gw.rss_empty}
                    for c in args.concurrency:
                        data = os.path.join(tmp, "perf.data") \
                            if args.profile and c == args.profile_concurrency else None
                        row[f"c{c}"] = run_wrk(gw.port, c, args.duration, script,
                                               args.load_cpus, gw.proc.pid, data)
                        if data:
                            row["profile"] = profile_top(data, row[f"c{c}"]["requests"],
                                                         args.profile)
                        if args.churn:
                            churn = Churn(gw.port, spare_urls, args.churn,
                                          cpu_list(args.load_cpus))
                            churn.start()
                            res = run_wrk(gw.port, c, args.duration, script, args.load_cpus,
                                          gw.proc.pid)
                            churn.stop_flag.set()
                            churn.join()
                            res["churn_ops"] = churn.ops
                            res["churn_failed"] = churn.failed
                            row[f"c{c}_churn"] = res
                finally:
                    gw.stop()
                results.append(row)
                tag = f" [{build}]" if len(builds) > 1 else ""
                line = f"round {rnd + 1} {policy:<15} W={w:<5}{tag} listed {gw.listed_s:6.2f} s " \
                       f"routable {gw.routable_s:6.2f} s rss {gw.rss:6.1f} MB"
                for c in args.concurrency:
                    r = row[f"c{c}"]
                    line += f" | c={c} {r['rps']:8.0f} req/s p50 {r['p50_ms']:.3f} " \
                            f"p99 {r['p99_ms']:.3f} cpu {r['cpu_us']:.1f} us/req " \
                            f"(sys {r.get('sys_us', 0):.1f}) tcp segs {r['segments']:.2f}"
                    if r["non2xx"] or r["socket_errors"]:
                        line += f" ERR {r['non2xx']}+{r['socket_errors']}"
                    if args.churn:
                        ch = row[f"c{c}_churn"]
                        line += f" churn {ch['rps']:8.0f} p99 {ch['p99_ms']:.3f}" \
                                f" ({ch['churn_ops']} ops, {ch['non2xx']} non-2xx," \
                                f" {ch['socket_errors']} socket errors)"
                print(line, flush=True)
                for us, sym in row.get("profile", []):
                    print(f"    {us:6.2f} us/req  {sym}", flush=True)

        print_summary(args, results)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        if workers:
            workers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def register_only(args, builds):
    """Registration time and RSS per worker, every (policy, W, way, build) once per round."""
    ports = worker_ports(max(args.workers))
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    workers = None
    results = []
    try:
        workers = FakeWorkers(ports, prefix=["taskset", "-c", args.load_cpus])
        for rnd in range(args.rounds):
            for policy in args.policies:
                for w in args.workers:
                    for reg in args.register:
                        for build in builds:
                            binary = os.path.join(build, "apps", "troupe", "troupe")
                            # RSS of the same gateway with no worker: the base of KB per worker.
                            gw0 = Gateway(binary, policy, [], "flag", args.gateway_cpu,
                                          args.log_level)
                            empty = rss_mb(gw0.proc.pid)
                            gw0.stop()
                            gw = Gateway(binary, policy, urls[:w], reg, args.gateway_cpu,
                                         args.log_level)
                            settled = None
                            if args.settle:
                                time.sleep(args.settle)
                                settled = rss_mb(gw.proc.pid)
                            gw.stop()
                            row = {"round": rnd + 1, "policy": policy, "workers": w,
                                   "register": reg, "build": build, "listed_s": gw.listed_s,
                                   "routable_s": gw.routable_s, "rss_mb": gw.rss,
                                   "rss_empty_mb": empty,
                                   "kb_per_worker": (gw.rss - empty) * 1024 / w}
                            line = f"rss {gw.rss:6.1f} MB ({row['kb_per_worker']:.1f} KB/worker)"
                            if settled is not None:
                                row["rss_settled_mb"] = settled
                                row["kb_per_worker_settled"] = (settled - empty) * 1024 / w
                                line += (f", {args.settle:g} s later {settled:6.1f} MB "
                                         f"({row['kb_per_worker_settled']:.1f} KB/worker)")
                            results.append(row)
                            print(f"round {rnd + 1} {policy:<15} W={w:<5} {reg:<4} {build}: "
                                  f"listed {gw.listed_s:6.2f} s routable {gw.routable_s:6.2f} s "
                                  + line, flush=True)
        settled_col = f" {'settled':>9}" if args.settle else ""
        print(f"\nmedians over {args.rounds} rounds (KB per worker when routable"
              + (f", and {args.settle:g} s later" if args.settle else "") + "):")
        print(f"{'policy':<15} {'W':>5} {'way':<4} {'listed s':>8} {'routable s':>10} "
              f"{'KB/worker':>9}{settled_col}  build")
        for policy in args.policies:
            for w in args.workers:
                for reg in args.register:
                    for build in builds:
                        rows = [r for r in results if (r["policy"], r["workers"], r["register"],
                                                       r["build"]) == (policy, w, reg, build)]
                        med = lambda k: statistics.median(r[k] for r in rows)
                        settled = f" {med('kb_per_worker_settled'):>9.1f}" if args.settle else ""
                        print(f"{policy:<15} {w:>5} {reg:<4} {med('listed_s'):>8.2f} "
                              f"{med('routable_s'):>10.2f} {med('kb_per_worker'):>9.1f}{settled}"
                              f"  {build}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        if workers:
            workers.stop()


def ratio_to_smallest(results, policy, w, smallest, c, value, build=None):
    """Median over rounds of `value(row)` at c=`c` for W=`w` against the same for W=`smallest`
    in the same round (one policy; one build, or any when None)."""
    def pick(n):
        return [r for r in results if r["policy"] == policy and r["workers"] == n
                and (build is None or r["build"] == build)]
    base = {r["round"]: r for r in pick(smallest)}
    k = f"c{c}"
    return statistics.median(value(r[k]) / value(base[r["round"]][k]) for r in pick(w))


def print_summary(args, results):
    smallest = min(args.workers)
    print(f"\nmedians over {args.rounds} rounds; ratios to W={smallest} of the same round and "
          "policy, then the median:")
    head = f"{'policy':<15} {'W':>5} {'listed s':>8} {'routable s':>10} {'RSS MB':>7} {'KB/worker':>9}"
    for c in args.concurrency:
        head += f" {'c' + str(c) + ' req/s':>11} {'ratio':>6} {'p50 ms':>7} {'p50 x':>6} {'p99 ms':>7}"
        head += f" {'cpu us':>6} {'cpu x':>5}"
        if args.churn:
            head += f" {'churn p99':>9} {'p99 x':>6} {'fail':>5}"
    print(head)
    for policy, build in [(p, b) for p in args.policies for b in args.builds]:
        if len(args.builds) > 1:
            print(f"{policy} [{build}]:")
        base = {r["round"]: r for r in results if r["policy"] == policy and r["workers"] == smallest
                and r["build"] == build}
        for w in args.workers:
            rows = [r for r in results if r["policy"] == policy and r["workers"] == w
                    and r["build"] == build]
            med = lambda f: statistics.median(f(r) for r in rows)
            rss = med(lambda r: r["rss_mb"])
            base_rss = med(lambda r: r["rss_empty_mb"] if r["rss_empty_mb"] is not None
                           else base[r["round"]]["rss_mb"])
            per_worker = (rss - base_rss) * 1024 / w if w != smallest or rows[0]["rss_empty_mb"] else 0
            line = f"{policy:<15} {w:>5} {med(lambda r: r['listed_s']):>8.2f} " \
                   f"{med(lambda r: r['routable_s']):>10.2f} {rss:>7.1f} {per_worker:>9.1f}"
            for c in args.concurrency:
                k = f"c{c}"
                ratio_of = lambda field: ratio_to_smallest(results, policy, w, smallest, c,
                                                           lambda x: x[field], build)
                ratio, p50x = ratio_of("rps"), ratio_of("p50_ms")
                line += f" {med(lambda r: r[k]['rps']):>11.0f} {ratio:>6.2f} " \
                        f"{med(lambda r: r[k]['p50_ms']):>7.3f} {p50x:>6.2f} " \
                        f"{med(lambda r: r[k]['p99_ms']):>7.3f}"
                cpux = ratio_of("cpu_us")
                line += f" {med(lambda r: r[k]['cpu_us']):>6.1f} {cpux:>5.2f}"
                if args.churn:
                    ck = f"c{c}_churn"
                    p99x = med(lambda r: r[ck]["p99_ms"] / r[k]["p99_ms"])
                    fails = sum(r[ck]["non2xx"] + r[ck]["socket_errors"] for r in rows)
                    line += f" {med(lambda r: r[ck]['p99_ms']):>9.3f} {p99x:>6.2f} {fails:>5}"
            print(line)


if __name__ == "__main__":
    main()
