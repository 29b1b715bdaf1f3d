#!/usr/bin/env python3
"""What a fleet of W workers costs other proxies: nginx (one worker process, round robin over
an `upstream` block of W servers, keepalive connections) and HAProxy (one thread, `balance
roundrobin` over a backend of W servers, `http-reuse always`) in front of the same fake workers
as bench/fleet_scale.py, side by side with troupe (round_robin), each pinned to one core. It
separates what the gateway's data structures cost at W workers from what W distinct upstream
connections cost any proxy on this machine (the kernel's per-socket state is cold when each
request goes to another of W sockets).

nginx is not a clean reference for the second: its round robin walks every peer on each pick,
and its keepalive cache is one list searched for the chosen peer's address, so it pays O(W)
per request twice. HAProxy picks from a tree (O(log W)) and keeps idle connections per server.

For each W, concurrency and round: req/s, p50, the proxy's CPU per request (user and system,
/proc) and the TCP segments the machine sent per request. Ratios are to the smallest W of the
same proxy, concurrency and round; medians over rounds. `--concurrency 1 64` adds c=1, where
the p50's ratio is what issue 11's target names (at most 1.1x).

Usage: bench/fleet_proxies.py [--workers 4 4000] [--rounds 3] [--duration 3]
           [--concurrency 64] [--proxies nginx haproxy troupe] [--profile N]
Needs wrk, nginx, haproxy and taskset (scripts/install-deps.sh); a proxy whose program is
missing is left out with a note. `--profile N` samples each proxy during each run (`perf
record`) and lists its N costliest functions, user and kernel, in µs per request.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet_scale as fs  # noqa: E402
from fake_worker import FakeWorkers, nginx_preamble, nginx_workdir  # noqa: E402
from loopback import free_port  # noqa: E402


def nginx_proxy_conf(tmp, port, worker_ports):
    servers = "\n".join(f"    server 127.0.0.1:{p};" for p in worker_ports)
    return f"""{nginx_preamble(tmp)}
  upstream fleet {{
{servers}
    keepalive {max(64, 2 * len(worker_ports))};
    keepalive_requests 1000000;
  }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location / {{
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
"""


def program(name):
    """The path of the program `name` (on PATH or in /usr/sbin), or None."""
    path = shutil.which(name) or f"/usr/sbin/{name}"
    return path if os.path.exists(path) else None


class ProxyProcess:
    """A proxy program on a config file of its own, pinned to `cpu`, serving on a free port:
    `make_conf(tmp, port)` writes the config's text, `argv(conf)` is the command line."""

    def __init__(self, name, tmp, conf_name, make_conf, argv, cpu):
        self.port = free_port()
        self.tmp = tmp
        conf = os.path.join(self.tmp, conf_name)
        with open(conf, "w") as f:
            f.write(make_conf(self.tmp, self.port))
        self.proc = subprocess.Popen(["taskset", "-c", str(cpu), *argv(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fs.wait_until(lambda: fs.get(self.port, "/health", 1)[0] == 200, 30, name)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


class NginxProxy(ProxyProcess):
    def __init__(self, worker_ports, cpu):
        nginx = program("nginx")
        super().__init__("nginx proxy", nginx_workdir("troupe-fleet-nginx-"), "nginx.conf",
                         lambda tmp, port: nginx_proxy_conf(tmp, port, worker_ports),
                         lambda conf: [nginx, "-c", conf], cpu)
        # The worker process does the proxying: its CPU is what counts.
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                             text=True).stdout.split()
        self.pid = int(out[0])


def haproxy_conf(tmp, port, worker_ports):
    servers = "\n".join(f"  server w{i} 127.0.0.1:{p}" for i, p in enumerate(worker_ports))
    return f"""global
  nbthread 1
  maxconn 9000
  pidfile {tmp}/haproxy.pid
defaults
  mode http
  option http-keep-alive
  http-reuse always
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend front
  bind 127.0.0.1:{port} backlog 4096
  default_backend fleet
backend fleet
  balance roundrobin
{servers}
"""


class HAProxy(ProxyProcess):
    def __init__(self, worker_ports, cpu):
        haproxy = program("haproxy")
        # -db: in the foreground, one process (no master): its CPU is what counts.
        super().__init__("haproxy", tempfile.mkdtemp(prefix="troupe-fleet-haproxy-"),
                         "haproxy.cfg", lambda tmp, port: haproxy_conf(tmp, port, worker_ports),
                         lambda conf: [haproxy, "-db", "-f", conf], cpu)


def available(proxy):
    return proxy == "troupe" or program(proxy) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 4000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64])
    ap.add_argument("--gateway-cpu", default="0")
    ap.add_argument("--load-cpus", default="1")
    ap.add_argument("--build", default=os.path.join(fs.ROOT, "build"))
    ap.add_argument("--proxies", nargs="+", choices=["nginx", "haproxy", "troupe"],
                    default=["nginx", "haproxy", "troupe"])
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="sample each proxy (perf record, user and kernel) during each run and "
                         "list its N costliest functions in µs per request")
    args = ap.parse_args()
    if args.profile and not shutil.which("perf"):
        sys.exit("--profile needs perf (scripts/install-deps.sh)")
    proxies = [p for p in args.proxies if available(p)]
    for p in set(args.proxies) - set(proxies):
        print(f"note: {p} is not installed (scripts/install-deps.sh); left out", flush=True)
    binary = os.path.join(args.build, "apps", "troupe", "troupe")
    tmp = tempfile.mkdtemp(prefix="troupe-fleet-proxies-lua-")
    script = fs.write_wrk_script(tmp)
    ports = fs.worker_ports(max(args.workers))
    workers = FakeWorkers(ports, prefix=["taskset", "-c", args.load_cpus])
    rows = []
    try:
        for rnd in range(args.rounds):
            for w in args.workers:
                for proxy in proxies:
                    if proxy == "nginx":
                        p = NginxProxy(ports[:w], args.gateway_cpu)
                        port, pid = p.port, p.pid
                    elif proxy == "haproxy":
                        p = HAProxy(ports[:w], args.gateway_cpu)
                        port, pid = p.port, p.pid
                    else:
                        p = fs.Gateway(binary, "round_robin", workers.urls[:w], "flag",
                                       args.gateway_cpu, "warn")
                        port, pid = p.port, p.proc.pid
                    try:
                        for c in args.concurrency:
                            fs.run_wrk(port, c, 1, script, args.load_cpus)  # warm-up
                            data = os.path.join(tmp, "perf.data") if args.profile else None
                            r = fs.run_wrk(port, c, args.duration, script, args.load_cpus, pid,
                                           data)
                            r.update(round=rnd, workers=w, proxy=proxy, conc=c)
                            rows.append(r)
                            print(f"round {rnd + 1} {proxy:<7} W={w:<5} c={c:<3} {r['rps']:8.0f} "
                                  f"req/s p50 {r['p50_ms']:.3f} ms cpu {r['cpu_us']:.1f} us/req "
                                  f"(sys {r['sys_us']:.1f}) segments {r['segments']:.2f}/req ctxt {r['ctxt']:.2f} "
                                  f"ipi {r['ipi']:.2f}/req errors "
                                  f"{r['non2xx'] + r['socket_errors']}", flush=True)
                            if data:
                                for us, name in fs.profile_top(data, r["requests"], args.profile):
                                    print(f"      {us:5.2f} us/req  {name}", flush=True)
                    finally:
                        p.stop()
        small = min(args.workers)
        print("\nmedians over rounds; ratios to W=%d of the same proxy, concurrency and round"
              % small)
        print(f"{'proxy':<8}{'c':>4}{'W':>6}{'req/s':>9}{'ratio':>7}{'p50 ms':>8}{'p50 x':>7}"
              f"{'cpu us':>8}{'user':>7}{'sys':>7}{'cpu x':>7}{'segs':>6}{'ctxt':>6}{'ipi':>6}")
        med = statistics.median
        for proxy in proxies:
            for c in args.concurrency:
                for w in args.workers:
                    mine = [r for r in rows
                            if r["proxy"] == proxy and r["workers"] == w and r["conc"] == c]

                    def base(r):
                        return next(b for b in rows if b["proxy"] == proxy and b["conc"] == c and
                                    b["workers"] == small and b["round"] == r["round"])
                    print(f"{proxy:<8}{c:>4}{w:>6}{med(r['rps'] for r in mine):>9.0f}"
                          f"{med(r['rps'] / base(r)['rps'] for r in mine):>7.2f}"
                          f"{med(r['p50_ms'] for r in mine):>8.3f}"
                          f"{med(r['p50_ms'] / base(r)['p50_ms'] for r in mine):>7.2f}"
                          f"{med(r['cpu_us'] for r in mine):>8.1f}"
                          f"{med(r['cpu_us'] - r['sys_us'] for r in mine):>7.1f}"
                          f"{med(r['sys_us'] for r in mine):>7.1f}"
                          f"{med(r['cpu_us'] / base(r)['cpu_us'] for r in mine):>7.2f}"
                          f"{med(r['segments'] for r in mine):>6.2f}"
                          f"{med(r['ctxt'] for r in mine):>6.2f}"
                          f"{med(r['ipi'] for r in mine):>6.2f}")
    finally:
        workers.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
