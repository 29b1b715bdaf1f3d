#!/usr/bin/env python3
"""Where a proxy's added latency goes at concurrency 1: troupe and nginx in front of the same
zero-latency troupe-sim (proxy_bench's set-up and request), each traced with the kernel's
syscall tracepoints (`perf record -e raw_syscalls:*` on the proxy's process) while `wrk -c1`
drives it. Every request is cut at the proxy's four socket system calls:

    client recv returns -> [in: request side] -> upstream send enters -> [worker: the send, the
    simulator, the wake-up] -> upstream recv returns -> [out: response side] -> client send
    enters -> [client: the send, wrk, the wake-up] -> next client recv returns

`in` and `out` are the proxy's own time on the request's path (user code plus the system calls
between, say an EAGAIN read); `tail` is what the proxy does after its client send before it
waits again (logs, metrics, teardown: off the path unless the next request arrives first).
Medians and p90 per segment, microseconds. Tracing adds a few microseconds to every system
call, to both proxies alike; compare the two, not absolute times.

Usage: bench/proxy_timeline.py [--build build] [--seconds 2] [--rounds 2] [--troupe-bin PATH]
                               [--troupe-flag=--log-level=warn]
Needs wrk, nginx and perf (linux-perf; tracepoints need root or perf_event_paranoid <= -1).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from loopback import free_port, wait_http
from proxy_bench import WRK_LUA, nginx_conf, request_body

# x86_64 system call numbers of the socket I/O both proxies use.
SYS = {0: "read", 1: "write", 19: "readv", 20: "writev", 44: "sendto", 45: "recvfrom",
       46: "sendmsg", 47: "recvmsg", 232: "epoll_wait", 281: "epoll_pwait"}
RECV = {"read", "readv", "recvfrom", "recvmsg"}
SEND = {"write", "writev", "sendto", "sendmsg"}
WAIT = {"epoll_wait", "epoll_pwait"}


def socket_peers(pid):
    """fd -> remote port of every TCP socket of process `pid`."""
    inode_port = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            inode_port[cols[9]] = int(cols[2].split(":")[1], 16)
    peers = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", link)
        if m and m.group(1) in inode_port:
            peers[int(fd)] = inode_port[m.group(1)]
    return peers


def worker_pid(pid):
    """nginx's worker process (the child of the master), or `pid` itself."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else pid
    except OSError:
        return pid


EVENT = re.compile(r"\s(\d+)\s+\[\d+\]\s+([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+)"
                   r"\s+(?:\(([0-9a-f, ]+)\)|= (-?\d+))")


def trace(pid, seconds, out):
    subprocess.run(["perf", "record", "-q", "-e", "raw_syscalls:sys_enter",
                    "-e", "raw_syscalls:sys_exit", "-p", str(pid), "-o", out, "--",
                    "sleep", str(seconds)], check=True, capture_output=True)
    text = subprocess.run(["perf", "script", "--ns", "-i", out], check=True, capture_output=True,
                          text=True).stdout
    events = []  # (time_us, tid, kind, name, fd or return value)
    for line in text.splitlines():
        m = EVENT.search(line)
        if not m or int(m.group(4)) not in SYS:
            continue
        tid, t, kind, nr = int(m.group(1)), float(m.group(2)) * 1e6, m.group(3), int(m.group(4))
        if m.group(5):
            args = [int(a, 16) for a in m.group(5).split(",")]
            # A wait that may block (epoll_wait's timeout, the fourth argument, not 0) is
            # marked by its fd -1; a poll (timeout 0) by its own fd.
            arg = -1 if SYS[nr] in WAIT and args[3] != 0 else args[0]
        else:
            arg = int(m.group(6))
        events.append((t, tid, kind, SYS[nr], arg))
    return events


def segments(events, upstream_port, peers):
    """Per request, µs: the segments of the module's docstring, from the proxy's system calls."""
    open_call = {}  # tid -> (name, fd) of the call it is in
    marks = []  # (time, mark)
    for t, tid, kind, name, arg in events:
        if kind == "enter":
            open_call[tid] = (name, arg)
            if name in SEND and arg in peers:
                side = "up" if peers[arg] == upstream_port else "client"
                marks.append((t, f"{side}_send"))
            elif name in WAIT and arg == -1:
                marks.append((t, "wait"))  # one that may block: the proxy has nothing to do
            continue
        name_fd = open_call.pop(tid, None)
        if not name_fd:
            continue
        name, fd = name_fd
        if fd in peers and (name in SEND or (name in RECV and arg > 0)):
            side = "up" if peers[fd] == upstream_port else "client"
            marks.append((t, f"{side}_{'sent' if name in SEND else 'recv'}"))
    order = ("up_send", "up_sent", "up_recv", "client_send", "client_sent")
    out = {k: [] for k in ("in", "up send", "worker", "out", "client send", "client", "cycle",
                           "worker tail", "tail")}
    i = 0
    while i < len(marks):
        if marks[i][1] != "client_recv":
            i += 1
            continue
        seq = {}
        j = i + 1
        for want in order:
            while j < len(marks) and marks[j][1] not in (want, "client_recv"):
                j += 1
            if j == len(marks) or marks[j][1] != want:
                break
            seq[want] = marks[j][0]
            j += 1
        if len(seq) != len(order):
            i = j
            continue
        nxt = next((k for k in range(j, len(marks)) if marks[k][1] == "client_recv"), None)
        if nxt is None:
            break
        wait = next((t for t, m in marks[j:nxt] if m == "wait"), None)
        up_sent_at = next(k for k in range(i, j) if marks[k][1] == "up_sent")
        up_wait = next((t for t, m in marks[up_sent_at:j] if m == "wait"), None)
        t0, t1 = marks[i][0], marks[nxt][0]
        out["in"].append(seq["up_send"] - t0)
        out["up send"].append(seq["up_sent"] - seq["up_send"])
        out["worker"].append(seq["up_recv"] - seq["up_sent"])
        out["out"].append(seq["client_send"] - seq["up_recv"])
        out["client send"].append(seq["client_sent"] - seq["client_send"])
        out["client"].append(t1 - seq["client_sent"])
        out["cycle"].append(t1 - t0)
        if wait is not None:
            out["tail"].append(wait - seq["client_sent"])
        if up_wait is not None:
            out["worker tail"].append(up_wait - seq["up_sent"])
        i = nxt
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--troupe-bin", help="default: BUILD/apps/troupe/troupe")
    ap.add_argument("--troupe-flag", action="append", default=[],
                    help="an extra flag for troupe (repeat)")
    args = ap.parse_args()
    for tool in ("wrk", "perf"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    sim_bin = os.path.join(args.build, "apps", "troupe-sim", "troupe-sim")
    troupe_bin = args.troupe_bin or os.path.join(args.build, "apps", "troupe", "troupe")
    tmp = tempfile.mkdtemp(prefix="troupe-timeline-")
    procs = []
    try:
        model = "bench-model"
        sim_port, troupe_port, nginx_port = free_port(), free_port(), free_port()
        procs.append(subprocess.Popen(
            [sim_bin, "--port", str(sim_port), "--model-id", model, "--ttft-base-ms", "0",
             "--prefill-us-per-token", "0", "--itl-ms", "0", "--output-tokens", "8",
             "--request-log-size", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{sim_port}/health")
        log = open(os.path.join(tmp, "troupe.log"), "w")
        procs.append(subprocess.Popen(
            [troupe_bin, "--port", str(troupe_port), "--worker-urls",
             f"http://127.0.0.1:{sim_port}", "--prometheus-port", "0"] + args.troupe_flag,
            stdout=log, stderr=subprocess.STDOUT))
        pids = {"troupe": procs[-1].pid}
        wait_http(f"http://127.0.0.1:{troupe_port}/readiness")
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        with open(os.path.join(tmp, "nginx.conf"), "w") as f:
            f.write(nginx_conf(tmp, nginx_port, sim_port))
        procs.append(subprocess.Popen([nginx, "-c", os.path.join(tmp, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_http(f"http://127.0.0.1:{nginx_port}/health")
        pids["nginx"] = worker_pid(procs[-1].pid)
        script = os.path.join(tmp, "post.lua")
        with open(script, "w") as f:
            f.write(WRK_LUA.format(body=request_body(model)))
        ports = {"troupe": troupe_port, "nginx": nginx_port}
        stats = {name: {} for name in ports}
        for r in range(args.rounds):
            for name, port in ports.items():
                url = f"http://127.0.0.1:{port}/v1/chat/completions"
                wrk = subprocess.Popen(["wrk", "-t1", "-c1", f"-d{args.seconds + 3:.0f}s", "-s",
                                        script, url], stdout=subprocess.DEVNULL)
                time.sleep(1.0)
                peers = socket_peers(pids[name])
                events = trace(pids[name], args.seconds, os.path.join(tmp, f"{name}.data"))
                wrk.wait()
                seg = segments(events, sim_port, peers)
                for k, v in seg.items():
                    stats[name].setdefault(k, []).extend(v)
                print(f"round {r + 1} {name}: {len(seg['cycle'])} requests traced",
                      file=sys.stderr)
        print(f"{'µs per request':<16}" + "".join(f"{n + ' p50':>12}{n + ' p90':>12}"
                                                  for n in ports))
        for k in ("in", "up send", "worker", "out", "client send", "client", "cycle",
                  "worker tail", "tail"):
            row = f"{k:<16}"
            for name in ports:
                v = sorted(stats[name][k]) or [0.0]
                row += f"{statistics.median(v):>12.1f}{v[int(len(v) * 0.9)]:>12.1f}"
            print(row)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
