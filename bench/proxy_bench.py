#!/usr/bin/env python3
"""Gateway overhead benchmark: the same request sent with wrk directly to a zero-latency
troupe-sim, through troupe, and through nginx as a plain keep-alive reverse proxy, interleaved
in rounds, at several concurrencies. Prints requests/s, p50 and p99 per target and the ratios.

Usage: bench/proxy_bench.py [--rounds 3] [--duration 5] [--concurrency 1 64] [--build build]
Needs wrk and nginx (scripts/install-deps.sh installs both).
"""

import argparse
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
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


def nginx_conf(tmp, port, upstream_port):
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
  }}
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
    return {"rps": rps, "p50_ms": lat.get("50"), "p99_ms": lat.get("99"),
            "non2xx": int(errors.group(1)) if errors else 0}


def run_wrk(url, conc, duration, script):
    threads = 1 if conc == 1 else 2
    cmd = ["wrk", "-t", str(threads), "-c", str(conc), "-d", f"{duration}s", "--latency",
           "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return parse_wrk(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--troupe-flag", action="append", default=[],
                    help="extra flag for troupe (repeatable), e.g. --troupe-flag=--io-threads=2")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()

    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not os.path.exists(f"/usr/sbin/{tool}"):
            sys.exit(f"{tool} is missing: run scripts/install-deps.sh")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    sim_bin = os.path.join(args.build, "apps", "troupe-sim", "troupe-sim")
    troupe_bin = os.path.join(args.build, "apps", "troupe", "troupe")

    tmp = tempfile.mkdtemp(prefix="troupe-bench-")
    procs = []
    try:
        model = "bench-model"
        sim_port, troupe_port, nginx_port = free_port(), free_port(), free_port()
        procs.append(subprocess.Popen(
            [sim_bin, "--port", str(sim_port), "--model-id", model, "--ttft-base-ms", "0",
             "--prefill-us-per-token", "0", "--itl-ms", "0", "--output-tokens", "8",
             "--request-log-size", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{sim_port}/health")
        procs.append(subprocess.Popen(
            [troupe_bin, "--port", str(troupe_port), "--worker-urls",
             f"http://127.0.0.1:{sim_port}", "--log-level", "warn", "--prometheus-port", "0"]
            + args.troupe_flag,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{troupe_port}/readiness")
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(nginx_conf(tmp, nginx_port, sim_port))
        procs.append(subprocess.Popen([nginx, "-c", os.path.join(tmp, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{nginx_port}/health")

        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(WRK_LUA.format(body=request_body(model)))
        targets = {"direct": sim_port, "troupe": troupe_port, "nginx": nginx_port}
        path = "/v1/chat/completions"
        # Warm-up: connections, caches, the prefix cache of the simulator.
        for port in targets.values():
            run_wrk(f"http://127.0.0.1:{port}{path}", 8, 1, script)

        results = {c: {t: [] for t in targets} for c in args.concurrency}
        for r in range(args.rounds):
            for c in args.concurrency:
                for name, port in targets.items():
                    res = run_wrk(f"http://127.0.0.1:{port}{path}", c, args.duration, script)
                    results[c][name].append(res)
                    print(f"round {r + 1} c={c:<3} {name:<7} {res['rps']:>9.0f} req/s  "
                          f"p50 {res['p50_ms']:.3f} ms  p99 {res['p99_ms']:.3f} ms"
                          + (f"  NON-2XX {res['non2xx']}" if res["non2xx"] else ""),
                          flush=True)

        print("\nmedians over rounds (ratios are per round, then the median):")
        print(f"{'c':>4} {'target':<7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'vs direct':>9} {'vs nginx':>9}")
        summary = {}
        for c in args.concurrency:
            for name in targets:
                rows = results[c][name]
                vs_direct = statistics.median(
                    rows[i]["rps"] / results[c]["direct"][i]["rps"] for i in range(len(rows)))
                vs_nginx = statistics.median(
                    rows[i]["rps"] / results[c]["nginx"][i]["rps"] for i in range(len(rows)))
                med = {k: statistics.median(x[k] for x in rows) for k in ("rps", "p50_ms", "p99_ms")}
                summary[f"c{c}_{name}"] = dict(med, vs_direct=vs_direct, vs_nginx=vs_nginx)
                print(f"{c:>4} {name:<7} {med['rps']:>9.0f} {med['p50_ms']:>8.3f} "
                      f"{med['p99_ms']:>8.3f} {vs_direct:>9.2f} {vs_nginx:>9.2f}")
            added_troupe = (summary[f"c{c}_troupe"]["p50_ms"] - summary[f"c{c}_direct"]["p50_ms"]) * 1000
            added_nginx = (summary[f"c{c}_nginx"]["p50_ms"] - summary[f"c{c}_direct"]["p50_ms"]) * 1000
            print(f"     added p50 at c={c}: troupe {added_troupe:+.0f} us, nginx {added_nginx:+.0f} us")
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
