#!/usr/bin/env python3
"""Gateway overhead benchmark: the same request sent with wrk directly to a zero-latency
troupe-sim, through troupe, and through nginx as a plain keep-alive reverse proxy, interleaved
in rounds (each round starting at the next target), at several concurrencies. Prints
requests/s, p50 and p99 per target and the ratios.

With --tls, two more targets terminate TLS with the same certificate (EC P-256, made for the
run with the openssl CLI): troupe with --tls-cert-path/--tls-key-path (`troupe_tls`) and nginx
with `listen ssl` (`nginx_tls`); both still reach the simulator over plain HTTP. wrk keeps its
connections, so this measures TLS on kept-alive connections (record encryption), not handshakes.

With --baseline-bin PATH, another troupe binary (say, built at the commit before a change) runs
as target `baseline` next to the current one, with the same flags. With --baseline-flag FLAG
(repeatable), the baseline gets FLAG too (after the common flags), and is the same binary
unless --baseline-bin says otherwise: `--baseline-flag=--busy-poll-us=0` measures troupe
with busy polling off beside troupe at its default.

Troupe runs at its default log level (info: one line per request), logging into a file, as a
production deployment would; nginx runs without an access log. `cpu us/req` is the CPU time
(user + system, from /proc) the target's process spent per request during its run: the
simulator's for `direct`, nginx's master and worker for nginx; `user` is its user-space part
(the process's own code; the rest is the kernel's sockets and scheduling). Behind a proxy,
`sim` is the simulator's CPU per request, `wrk` wrk's, `machine` the whole machine's busy CPU
per request (/proc/stat) and `idle` its idle share during the run: where a proxy makes its
peers work more, or leaves the CPUs idle, these show it.

Usage: bench/proxy_bench.py [--rounds 3] [--duration 5] [--concurrency 1 64] [--build build]
                            [--tls] [--baseline-bin PATH] [--baseline-flag FLAG]
                            [--troupe-log-level LEVEL]
Needs wrk and nginx (scripts/install-deps.sh installs both), and openssl for --tls.
"""

import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

from loopback import cpu_times, free_port, wait_http

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def make_cert(tmp):
    """A self-signed EC P-256 certificate for 127.0.0.1: (cert, key) paths."""
    cert, key = os.path.join(tmp, "bench.crt"), os.path.join(tmp, "bench.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


def nginx_tls_server(port, cert, key):
    """An nginx server block terminating TLS 1.2+ on `port` with `cert`, proxying as the plain
    one does."""
    return f"""
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {{
      proxy_pass http://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}"""


def wait_https(url, timeout=10):
    """As wait_http, over TLS without verifying the (self-signed) certificate."""
    import ssl
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    wait_http(url, timeout, context=ctx)


def nginx_conf(tmp, port, upstream_port, extra_servers=""):
    return f"""
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream sim {{ server 127.0.0.1:{upstream_port}; keepalive 128; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}{extra_servers}
}}
"""


WRK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[{body}]]
"""


def request_body(model):
    # About 1 KB of prompt, non-streaming, a short answer.
    prompt = ("The quick brown fox jumps over the lazy dog. " * 23)[:1000]
    return json.dumps({"model": model, "max_tokens": 8,
                       "messages": [{"role": "user", "content": prompt}]})


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(out):
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {}
    for pct, val, unit in re.findall(r"^\s+(50|99)\.000%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        lat[pct] = float(val) * UNITS[unit]
    if not lat:  # wrk without the detailed distribution
        for pct, val, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
            lat[pct] = float(val) * UNITS[unit]
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": rps, "requests": requests, "p50_ms": lat.get("50"), "p99_ms": lat.get("99"),
            "non2xx": int(errors.group(1)) if errors else 0}


def run_wrk(url, conc, duration, script):
    threads = 1 if conc == 1 else 2
    cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", f"{duration}s", "--latency",
           "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return parse_wrk(out)


def machine_times():
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks) - idle) / tick, sum(ticks) / tick


def run_wrk_cpu(url, conc, duration, script, pid, sim_pid=None):
    """As run_wrk, plus `cpu_us`: the CPU time process `pid` spent per request meanwhile, and
    `user_us`, the part of it in user space (the proxy's own code, not the kernel's); `sim_us`,
    the simulator's (process `sim_pid`) per request, `wrk_us` wrk's, and `machine_us` the whole
    machine's busy CPU per request, `idle` the machine's idle share during the run: where a
    proxy makes its peers work more, or leaves the CPUs idle, these show it."""
    user0, system0 = cpu_times(pid, children=True)
    sim0 = sum(cpu_times(sim_pid)) if sim_pid else 0.0
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk's, once it is reaped
    busy0, total0 = machine_times()
    res = run_wrk(url, conc, duration, script)
    busy1, total1 = machine_times()
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sim1 = sum(cpu_times(sim_pid)) if sim_pid else 0.0
    user1, system1 = cpu_times(pid, children=True)
    n = max(res["requests"], 1)
    res["cpu_us"] = (user1 - user0 + system1 - system0) * 1e6 / n
    res["user_us"] = (user1 - user0) * 1e6 / n
    res["sim_us"] = (sim1 - sim0) * 1e6 / n
    res["wrk_us"] = ((kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)) * 1e6 / n
    res["machine_us"] = (busy1 - busy0) * 1e6 / n
    res["idle"] = 1 - (busy1 - busy0) / max(total1 - total0, 1e-9)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--troupe-flag", action="append", default=[],
                    help="extra flag for troupe (repeatable), e.g. --troupe-flag=--io-threads=2")
    ap.add_argument("--baseline-bin",
                    help="another troupe binary (e.g. of the commit before a change), measured "
                         "side by side as target `baseline`")
    ap.add_argument("--baseline-flag", action="append", default=[],
                    help="extra flag for the baseline only (repeatable); without --baseline-bin "
                         "the baseline is the same troupe binary")
    ap.add_argument("--tls", action="store_true",
                    help="also measure troupe and nginx terminating TLS with the same certificate")
    ap.add_argument("--troupe-log-level",
                    help="troupe's --log-level (default: troupe's own default, info)")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()

    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"{tool} is missing: run scripts/install-deps.sh")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    sim_bin = os.path.join(args.build, "apps", "troupe-sim", "troupe-sim")
    troupe_bin = os.path.join(args.build, "apps", "troupe", "troupe")
    if args.baseline_flag and not args.baseline_bin:
        args.baseline_bin = troupe_bin

    tmp = tempfile.mkdtemp(prefix="troupe-bench-")
    procs = []
    try:
        model = "bench-model"
        sim_port, troupe_port, nginx_port = free_port(), free_port(), free_port()
        sim_proc = subprocess.Popen(
            [sim_bin, "--port", str(sim_port), "--model-id", model, "--ttft-base-ms", "0",
             "--prefill-us-per-token", "0", "--itl-ms", "0", "--output-tokens", "8",
             "--request-log-size", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(sim_proc)
        pids = {"direct": sim_proc.pid}
        wait_http(f"http://127.0.0.1:{sim_port}/health")
        log_flags = ["--log-level", args.troupe_log_level] if args.troupe_log_level else []
        # Troupe logs as it would in production: at its default level (a line per request at
        # info), into a file.
        troupe_log = open(os.path.join(tmp, "troupe.log"), "w")
        procs.append(subprocess.Popen(
            [troupe_bin, "--port", str(troupe_port), "--worker-urls",
             f"http://127.0.0.1:{sim_port}", "--prometheus-port", "0"] + log_flags
            + args.troupe_flag,
            stdout=troupe_log, stderr=subprocess.STDOUT))
        pids["troupe"] = procs[-1].pid
        wait_http(f"http://127.0.0.1:{troupe_port}/readiness")
        if args.baseline_bin:
            baseline_port = free_port()
            baseline_log = open(os.path.join(tmp, "baseline.log"), "w")
            procs.append(subprocess.Popen(
                [args.baseline_bin, "--port", str(baseline_port), "--worker-urls",
                 f"http://127.0.0.1:{sim_port}", "--prometheus-port", "0"] + log_flags
                + args.troupe_flag + args.baseline_flag,
                stdout=baseline_log, stderr=subprocess.STDOUT))
            pids["baseline"] = procs[-1].pid
            wait_http(f"http://127.0.0.1:{baseline_port}/readiness")
        extra_nginx = ""
        if args.tls:
            cert, key = make_cert(tmp)
            troupe_tls_port, nginx_tls_port = free_port(), free_port()
            procs.append(subprocess.Popen(
                [troupe_bin, "--port", str(troupe_tls_port), "--worker-urls",
                 f"http://127.0.0.1:{sim_port}", "--prometheus-port", "0",
                 "--tls-cert-path", cert, "--tls-key-path", key] + log_flags + args.troupe_flag,
                stdout=troupe_log, stderr=subprocess.STDOUT))
            pids["troupe_tls"] = procs[-1].pid
            wait_https(f"https://127.0.0.1:{troupe_tls_port}/readiness")
            extra_nginx = nginx_tls_server(nginx_tls_port, cert, key)
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(nginx_conf(tmp, nginx_port, sim_port, extra_nginx))
        procs.append(subprocess.Popen([nginx, "-c", os.path.join(tmp, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        pids["nginx"] = pids["nginx_tls"] = procs[-1].pid
        wait_http(f"http://127.0.0.1:{nginx_port}/health")
        if args.tls:
            wait_https(f"https://127.0.0.1:{nginx_tls_port}/health")

        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(WRK_LUA.format(body=request_body(model)))
        targets = {"direct": f"http://127.0.0.1:{sim_port}",
                   "troupe": f"http://127.0.0.1:{troupe_port}",
                   "nginx": f"http://127.0.0.1:{nginx_port}"}
        if args.baseline_bin:
            targets["baseline"] = f"http://127.0.0.1:{baseline_port}"
        if args.tls:
            targets["troupe_tls"] = f"https://127.0.0.1:{troupe_tls_port}"
            targets["nginx_tls"] = f"https://127.0.0.1:{nginx_tls_port}"
        path = "/v1/chat/completions"
        # Warm-up: connections, caches, the prefix cache of the simulator.
        for base in targets.values():
            run_wrk(f"{base}{path}", 8, 1, script)

        results = {c: {t: [] for t in targets} for c in args.concurrency}
        for r in range(args.rounds):
            for c in args.concurrency:
                # Each round starts at another target: no target always runs first or
                # right after the same neighbour (what a process left warm or busy).
                names = list(targets)
                k = r % len(names)
                for name in names[k:] + names[:k]:
                    base = targets[name]
                    res = run_wrk_cpu(f"{base}{path}", c, args.duration, script, pids[name],
                                      None if name == "direct" else pids["direct"])
                    results[c][name].append(res)
                    print(f"round {r + 1} c={c:<3} {name:<7} {res['rps']:>9.0f} req/s  "
                          f"p50 {res['p50_ms']:.3f} ms  p99 {res['p99_ms']:.3f} ms  "
                          f"cpu {res['cpu_us']:.1f} us/req (user {res['user_us']:.1f})  "
                          f"sim {res['sim_us']:.1f} wrk {res['wrk_us']:.1f} "
                          f"machine {res['machine_us']:.1f} idle {res['idle']:.0%}"
                          + (f"  NON-2XX {res['non2xx']}" if res["non2xx"] else ""),
                          flush=True)

        print("\nmedians over rounds (ratios are per round, then the median; a TLS target is "
              "compared with nginx_tls):")
        print(f"{'c':>4} {'target':<10} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'vs direct':>9} {'vs nginx':>9} {'cpu us/req':>10} {'user':>7} {'sim':>6} "
              f"{'wrk':>6} {'machine':>8} {'idle':>5}")
        summary = {}
        for c in args.concurrency:
            for name in targets:
                rows = results[c][name]
                vs_direct = statistics.median(
                    rows[i]["rps"] / results[c]["direct"][i]["rps"] for i in range(len(rows)))
                ref = "nginx_tls" if name.endswith("_tls") else "nginx"
                vs_nginx = statistics.median(
                    rows[i]["rps"] / results[c][ref][i]["rps"] for i in range(len(rows)))
                med = {k: statistics.median(x[k] for x in rows)
                       for k in ("rps", "p50_ms", "p99_ms", "cpu_us", "user_us", "sim_us", "wrk_us",
                                 "machine_us", "idle")}
                summary[f"c{c}_{name}"] = dict(med, vs_direct=vs_direct, vs_nginx=vs_nginx)
                print(f"{c:>4} {name:<10} {med['rps']:>9.0f} {med['p50_ms']:>8.3f} "
                      f"{med['p99_ms']:>8.3f} {vs_direct:>9.2f} {vs_nginx:>9.2f} "
                      f"{med['cpu_us']:>10.1f} {med['user_us']:>7.1f} {med['sim_us']:>6.1f} "
                      f"{med['wrk_us']:>6.1f} {med['machine_us']:>8.1f} {med['idle']:>5.0%}")
            added_troupe = (summary[f"c{c}_troupe"]["p50_ms"] - summary[f"c{c}_direct"]["p50_ms"]) * 1000
            added_nginx = (summary[f"c{c}_nginx"]["p50_ms"] - summary[f"c{c}_direct"]["p50_ms"]) * 1000
            print(f"     added p50 at c={c}: troupe {added_troupe:+.0f} us, nginx {added_nginx:+.0f} us")
            if args.tls:
                cost = {n: statistics.median(
                    results[c][f"{n}_tls"][i]["rps"] / results[c][n][i]["rps"]
                    for i in range(args.rounds)) for n in ("troupe", "nginx")}
                print(f"     TLS at c={c}: troupe keeps {cost['troupe']:.2f} of its plain req/s, "
                      f"nginx {cost['nginx']:.2f}; troupe_tls / nginx_tls "
                      f"{summary[f'c{c}_troupe_tls']['vs_nginx']:.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": {str(k): v for k, v in results.items()},
                           "summary": summary}, f, indent=2)
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
