#!/usr/bin/env python3
"""What one proxied request costs a proxy, counted rather than timed, so the numbers hold on a
loaded machine: instructions, heap allocations (calls of malloc/calloc/realloc) and system calls
(epoll_wait: reactor passes) per request, for troupe and for nginx as a plain keep-alive reverse
proxy in front of the same zero-latency troupe-sim, with the request of bench/proxy_bench.py.

The proxy runs under `valgrind --tool=callgrind` (instructions, allocations) or is attached by
`strace -c -f` (system calls). Counting starts after a warm-up (`callgrind_control -z`, or strace
attaching then) and stops after a wrk run at fixed concurrency; the counts are divided by the
requests wrk completed.

Usage: bench/proxy_cost.py [--targets troupe nginx] [--tool callgrind strace] [--concurrency 16]
                           [--duration 10] [--build build] [--troupe-bin PATH] [--log-level info]
                           [--top 0] [--stages] [--keep DIR]
"""

import argparse
import collections
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxy_bench as pb  # noqa: E402
from loopback import knows_flag  # noqa: E402

ALLOC_FNS = {"malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign"}


def is_allocation(caller, callee):
    """True for a call that allocates: of malloc and its kin (glibc names them), or of
    `operator new` (jemalloc's entry points have no names under callgrind), but not the
    malloc call inside `operator new` (counted once)."""
    name = callee.split("'")[0]
    if name.startswith("operator new"):
        return True
    return name in ALLOC_FNS and not (caller or "").startswith("operator new")


# The request path's stages as named functions, for `--stages`: (depth, label, the start of the
# function's name as callgrind prints it). Each line is that function's inclusive cost per
# request (its own instructions and those of everything it calls); an indented line is part of
# the line above it, so lines are not to be summed.
STAGES = [
    (0, "client read: Beast's request parser (head, fields, body)",
     "boost::beast::http::basic_parser<true>::put(boost::asio::const_buffer"),
    (0, "front: route lookup", "troupe::gateway::route_table::find("),
    (0, "front: request id", "troupe::gateway::request_id_of"),
    (0, "front: spawn of the request actor", "troupe::actors::spawn_request("),
    (0, "request actor: JSON scan of the body", "troupe::protocol::scan_and_validate("),
    (0, "request actor: the pick", "troupe::actors::direct_picker::pick("),
    (0, "request actor: the upstream call started",
     "troupe::actors::(anonymous namespace)::single_path::start("),
    (1, "the worker's header fields", "troupe::actors::upstream_headers("),
    (1, "the request head serialized", "troupe::transport::serialize_request_head"),
    (0, "worker's response: Beast's head parse",
     "boost::beast::http::basic_parser<false>::put(boost::asio::const_buffer"),
    (0, "relay: the client's head", "troupe::actors::relay_sink::on_head("),
    (0, "relay: the body, then the answer sent", "troupe::actors::relay_sink::on_complete("),
    (1, "HTTP metrics", "troupe::services::metrics::on_http_response("),
    (0, "request actor: finish (log line, metrics, tracker, quit)",
     "troupe::actors::finish_request("),
    (1, "the log line's write (spdlog)", "spdlog::logger::log_it_("),
    (1, "the actor's end", "caf::scheduled_actor::quit("),
]


def parse_callgrind(path, top):
    """(total instructions, allocation calls, top functions by exclusive instructions) of a
    callgrind output written with --compress-strings=no --compress-pos=no."""
    return read_callgrind(path, top)[:3]


def read_callgrind(path, top):
    """`parse_callgrind`'s three, then the inclusive instructions by function and the exclusive
    instructions by object file. `top` None lists every function's own instructions."""
    total = 0
    allocs = 0
    self_cost = collections.Counter()
    inclusive = collections.Counter()
    by_object = collections.Counter()
    fn = None
    obj = None
    fn_obj = None
    in_call = False
    call_target = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                fn = line[3:].strip()
                fn_obj = obj
                in_call = False
            elif line.startswith("ob="):
                obj = os.path.basename(line[3:].strip())
            elif line.startswith("cfn="):
                call_target = line[4:].strip()
            elif line.startswith("calls="):
                in_call = True
                if is_allocation(fn, call_target):
                    allocs += int(line.split()[0][6:])
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if len(parts) < 2 or fn is None:
                    continue
                if in_call:
                    in_call = False  # the inclusive cost of the call: not this function's own
                    if call_target != fn:
                        inclusive[fn] += int(parts[1])
                    continue
                self_cost[fn] += int(parts[1])
                inclusive[fn] += int(parts[1])
                by_object[fn_obj] += int(parts[1])
    listed = self_cost.most_common(top) if top or top is None else []
    return total, allocs, listed, inclusive, by_object


def print_stages(inclusive, by_object, n):
    """The request path's stages (`STAGES`) and the instructions of each object file, per
    request."""
    print("    stages (inclusive instructions/request; indented lines are part of the one above):")
    for depth, label, prefix in STAGES:
        cost = max((ir for name, ir in inclusive.items() if name.startswith(prefix)), default=None)
        shown = f"{cost / n:>9,.0f}" if cost is not None else "      n/a"
        print(f"    {shown}  {'  ' * depth}{label}")
    print("    own instructions/request by object file:")
    for obj, ir in by_object.most_common(6):
        print(f"    {ir / n:>9,.0f}  {obj}")


def start_sim(build, port):
    sim_bin = os.path.join(build, "apps", "troupe-sim", "troupe-sim")
    p = subprocess.Popen(
        [sim_bin, "--port", str(port), "--model-id", "bench-model", "--ttft-base-ms", "0",
         "--prefill-us-per-token", "0", "--itl-ms", "0", "--output-tokens", "8",
         "--request-log-size", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pb.wait_http(f"http://127.0.0.1:{port}/health")
    return p


def proxy_command(target, args, tmp, port, sim_port):
    if target == "troupe":
        # Busy polling off: what is counted is the requests' work, not the io thread polling
        # between them (which callgrind and strace would count as instructions and calls).
        poll_off = (["--busy-poll-us", "0"] if knows_flag(args.troupe_bin, "--busy-poll-us")
                    else [])
        return [args.troupe_bin, "--port", str(port), "--worker-urls",
                f"http://127.0.0.1:{sim_port}", "--log-level", args.log_level,
                "--prometheus-port", "0"] + poll_off
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    conf = pb.nginx_conf(tmp, port, sim_port)
    # One process: the worker is the process valgrind and strace see.
    conf = conf.replace("daemon off;", "daemon off;\nmaster_process off;")
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return [shutil.which("nginx") or "/usr/sbin/nginx", "-c", path]


def run_wrk_count(url, conc, duration, script):
    cmd = ["wrk", "-t", "1", "-c", str(conc), "-d", f"{duration}s", "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    n = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if non2xx:
        sys.exit(f"wrk saw {non2xx.group(1)} error responses:\n{out}")
    return n


def measure(target, tool, args, sim_port, script):
    tmp = tempfile.mkdtemp(prefix=f"troupe-cost-{target}-")
    port = pb.free_port()
    cmd = proxy_command(target, args, tmp, port, sim_port)
    log = open(os.path.join(tmp, "proxy.log"), "w")
    if tool == "callgrind":
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--compress-strings=no", "--compress-pos=no"] + cmd
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        pb.wait_http(f"{url}/readiness" if target == "troupe" else f"{url}/health", timeout=60)
        run_wrk_count(f"{url}/v1/chat/completions", args.concurrency, 2, script)  # warm-up
        if tool == "callgrind":
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                           capture_output=True)
            n = run_wrk_count(f"{url}/v1/chat/completions", args.concurrency, args.duration,
                              script)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                           capture_output=True)
            dumps = sorted(glob.glob(out + "*"), key=os.path.getmtime)
            total, allocs, top, inclusive, by_object = read_callgrind(dumps[-1], args.top)
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copy(dumps[-1], os.path.join(args.keep, f"{target}.callgrind"))
            print(f"{target:<7} callgrind c={args.concurrency}: {n} requests, "
                  f"{total / n:,.0f} instructions/request, {allocs / n:.1f} allocations/request",
                  flush=True)
            for name, ir in top:
                print(f"    {ir / n:>9,.0f}  {name[:150]}")
            if args.stages and target == "troupe":
                print_stages(inclusive, by_object, n)
        else:
            st = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1)
            n = run_wrk_count(f"{url}/v1/chat/completions", args.concurrency, args.duration,
                              script)
            st.send_signal(signal.SIGINT)
            _, err = st.communicate(timeout=30)
            calls = {}
            for line in err.splitlines():
                m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
                if m and m.group(2) != "total":
                    calls[m.group(2)] = int(m.group(1))
            total = sum(calls.values())
            print(f"{target:<7} strace c={args.concurrency}: {n} requests, "
                  f"{total / n:.1f} system calls/request: " +
                  ", ".join(f"{k} {v / n:.2f}" for k, v in
                            sorted(calls.items(), key=lambda kv: -kv[1]) if v / n >= 0.01),
                  flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", nargs="+", default=["troupe", "nginx"])
    ap.add_argument("--tool", nargs="+", default=["callgrind", "strace"])
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(pb.ROOT, "build"))
    ap.add_argument("--troupe-bin", help="default: BUILD/apps/troupe/troupe")
    ap.add_argument("--log-level", default="info", help="troupe's --log-level")
    ap.add_argument("--keep", help="copy the callgrind outputs (TARGET.callgrind) to this folder")
    ap.add_argument("--top", type=int, default=0,
                    help="also list the N functions with the most instructions of their own")
    ap.add_argument("--stages", action="store_true",
                    help="also list troupe's request path by stage (inclusive instructions of "
                         "named functions) and its instructions by object file")
    args = ap.parse_args()
    args.troupe_bin = args.troupe_bin or os.path.join(args.build, "apps", "troupe", "troupe")
    tmp = tempfile.mkdtemp(prefix="troupe-cost-")
    sim_port = pb.free_port()
    sim = start_sim(args.build, sim_port)
    try:
        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(pb.WRK_LUA.format(body=pb.request_body("bench-model")))
        for tool in args.tool:
            for target in args.targets:
                measure(target, tool, args, sim_port, script)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
