#!/usr/bin/env python3
"""Streams at scale, measured with troupe-bench (docs/bench.md) through one troupe node:

  many     N concurrent streamed chats (default 10,000, fewer if the open-file limit cannot
           hold them) against simulators with long outputs: the gateway's peak RSS, its RSS
           per stream, and every request's outcome.
  ttft     the time to first token the gateway adds at C concurrent streams (default 256):
           by default paired (one troupe-bench run, Poisson arrivals keeping C streams in flight
           straight to the simulator and C through troupe at once, so both meet the same load);
           `--ttft-mode sequential`: a run each at a fixed concurrency, interleaved. The
           difference of the TTFT percentiles, per round, then the median. A paired round
           measures at least --ttft-samples streams on each path (~45 s at the defaults).
  prompts  non-streamed requests/s with 100 KB prompts against 1 KB prompts at concurrency 64,
           through troupe and direct, interleaved rounds, against a fake worker (nginx with a
           canned answer, bench/fake_worker.py) that reads the body whole and ignores it (the
           simulator tokenizes every prompt and would be what the run measures;
           `--discarding-worker`: nginx's own discard of an unread body, 4 KB per read, as
           before 2026-12-04); beside it the gateway's CPU per request at each size.

Usage: bench/streams_bench.py [many|ttft|prompts ...] [--rounds 3] [--streams 10000]
           [--ttft-concurrency 256] [--ttft-mode paired|sequential] [--ttft-itl-ms 500]
           [--ttft-tokens 8] [--ttft-samples 3000] [--discarding-worker] [--build build]
           [--json out.json]
N streams are 2N sockets in the gateway (client and worker side): the processes' open-file
limit must allow it. The bench raises its own limit (soft and hard) to 2N + 4,096 when it can
(as root, or within the hard limit), and the processes it starts inherit it (troupe and
troupe-bench raise their soft limit to the hard one). Without that, the machines of
docs/performance.md have a hard limit of 20,000: 9,900 streams at most.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from fake_worker import MODEL as FAKE_MODEL, FakeWorkers
from fleet_scale import cpu_seconds
from loopback import Processes, free_port, wait_http

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MODEL = "bench-model"


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class Procs(Processes):
    def __init__(self, build):
        super().__init__()
        self.build = build

    def sim(self, *flags):
        port = free_port()
        self.start([os.path.join(self.build, "apps", "troupe-sim", "troupe-sim"), "--port", port,
                    "--model-id", MODEL, "--request-log-size", 0, "--log-level", "warn", *flags])
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/health", timeout=20)
        return url

    def troupe(self, sims, *flags):
        port = free_port()
        p = self.start([os.path.join(self.build, "apps", "troupe", "troupe"), "--port", port,
                        "--prometheus-port", 0, "--log-level", "warn", "--worker-urls", *sims,
                        *flags])
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/readiness", timeout=20)
        return url, p


def bench(build, *args, model=MODEL, timeout=900):
    """Runs troupe-bench; its JSON report's first stage."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [os.path.join(build, "apps", "troupe-bench", "troupe-bench"), "--model", model,
               "--progress", "off", "--json", out, *map(str, args)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"troupe-bench failed ({p.returncode}): {p.stderr}")
        with open(out) as f:
            return json.load(f)["stages"][0]


def prompt_file(tmp, size):
    path = os.path.join(tmp, f"prompt-{size}.jsonl")
    words = ("lorem ipsum dolor sit amet consectetur adipiscing elit " * (size // 50 + 1))[:size]
    with open(path, "w") as f:
        f.write(json.dumps({"prompt": words}) + "\n")
    return path


def raise_open_files(need):
    """Raises this process's open-file limit (soft and hard) to `need` if it is lower and the
    process may (root may raise the hard limit up to fs.nr_open); the children inherit it.
    Returns the limit now in force."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, need))
            return need
        except (ValueError, OSError) as e:
            print(f"open-file limit {hard}, not raised to {need} ({e}): at most "
                  f"{max(0, (hard - 200) // 2)} streams hold (`ulimit -Hn` raises it)",
                  file=sys.stderr)
            need = hard
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return need


def many(args, results):
    """N concurrent long streams through one gateway; its RSS."""
    procs = Procs(args.build)
    try:
        # Each stream: first token after 200 ms, then a token a second for --stream-seconds:
        # all N are open together for most of the run.
        tokens = args.stream_seconds
        sims = [procs.sim("--ttft-base-ms", 200, "--prefill-us-per-token", 0, "--itl-ms", 1000,
                          "--output-tokens", tokens) for _ in range(args.sims)]
        # The default --max-connections (8192) refuses client connections beyond it: the
        # run raises it to the streams it holds (plus room for the health and RSS probes).
        gw, gw_proc = procs.troupe(sims, "--max-connections", args.streams + 64)
        idle = rss_mb(gw_proc.pid)
        peak = [idle]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb(gw_proc.pid))
                stop.wait(0.2)

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        started = time.time()
        stage = bench(args.build, "--url", gw, "--concurrency", args.streams, "--requests",
                      args.streams, "--duration", 0, "--max-tokens", tokens, "--system-prompts", 0,
                      "--user-tokens", 20, "--threads", 2, "--timeout", 600)
        stop.set()
        t.join()
        row = {"streams": args.streams, "sims": args.sims, "tokens": tokens,
               "wall_s": time.time() - started, "ok": stage["ok"], "failed": stage["failed"],
               "failures": stage["failures"], "first_errors": stage.get("first_errors", []),
               "rss_idle_mb": idle, "rss_peak_mb": peak[0],
               "kb_per_stream": (peak[0] - idle) * 1024 / args.streams,
               "ttft_p50_ms": stage["ttft_ms"]["p50"], "ttft_p99_ms": stage["ttft_ms"]["p99"],
               "itl_p99_ms": stage["itl_ms"]["p99"]}
        results["many"] = row
        print(f"many: {row['streams']} streams x {tokens} tokens over {args.sims} simulators: "
              f"{row['ok']} ok, {row['failed']} failed {row['failures'] or ''}; gateway RSS "
              f"{idle:.0f} MB idle, {peak[0]:.0f} MB peak ({row['kb_per_stream']:.1f} KB per "
              f"stream); TTFT p50 {row['ttft_p50_ms']:.0f} ms p99 {row['ttft_p99_ms']:.0f} ms; "
              f"ITL p99 {row['itl_p99_ms']:.0f} ms", flush=True)
        for error in row["first_errors"][:3]:
            print(f"  a failure: {error}", flush=True)
    finally:
        procs.stop_all()


def ttft(args, results):
    """The TTFT the gateway adds at C concurrent streams through it.

    paired (default): one troupe-bench run sends Poisson arrivals round robin over the
    simulator directly and through troupe, at the rate that keeps C streams in flight on each
    path: both halves meet the same simulator load and the same machine noise, so the
    difference of their TTFTs (per-URL figures of one stage) is the gateway's. sequential: a
    run direct, then a run through troupe, C streams each at a fixed concurrency (what was
    measured first: on a shared machine the spread between runs is larger than the effect, and
    the streams of a fixed concurrency start and end in lockstep, a burst of C at a time).
    """
    procs = Procs(args.build)
    try:
        itl, tokens = args.ttft_itl_ms, args.ttft_tokens
        e2e_s = (20 + (tokens - 1) * itl) / 1000.0  # the simulator's model, unloaded
        sim = procs.sim("--ttft-base-ms", 20, "--prefill-us-per-token", 0, "--itl-ms", itl,
                        "--output-tokens", tokens)
        gw, _ = procs.troupe([sim])
        paired = args.ttft_mode == "paired"
        shape = ["--max-tokens", tokens, "--system-prompts", 4, "--system-prompt-tokens", 200,
                 "--users", 256]
        if paired:
            rate = 2 * args.ttft_concurrency / e2e_s
            # Long enough for --ttft-samples measured streams on each path after the warm-up:
            # a p99 of a few hundred is their 4th-worst, and one stall of the host moves it
            # by milliseconds.
            warmup = e2e_s + 1
            duration = max(args.duration, 3 * e2e_s, warmup + 2 * args.ttft_samples / rate)
            load = ["--rate", f"{rate:.1f}", "--duration", f"{duration:.1f}", "--warmup", warmup]
        else:
            load = ["--concurrency", args.ttft_concurrency, "--duration", args.duration,
                    "--warmup", 2]
        rows = []
        for r in range(args.rounds):
            row = {}
            if paired:
                s = bench(args.build, "--url", f"{sim},{gw}", *load, *shape)
                for name, t in zip(("direct", "troupe"), s["targets"]):
                    row[name] = {k: t["ttft_ms"][k] for k in ("p50", "p90", "p99")}
                    row[name]["failed"] = t["requests"] - t["ok"]
                    row[name]["streams"] = t["ttft_ms"]["count"]
            else:
                for name, url in (("direct", sim), ("troupe", gw)):
                    s = bench(args.build, "--url", url, *load, *shape)
                    row[name] = {k: s["ttft_ms"][k] for k in ("p50", "p90", "p99")}
                    row[name]["failed"] = s["failed"]
                    row[name]["rps"] = s["throughput"]["requests_per_s"]
            rows.append(row)
            print(f"ttft round {r + 1} ({args.ttft_mode}, itl {itl} ms): direct p50 "
                  f"{row['direct']['p50']:.2f} p99 {row['direct']['p99']:.2f} ms; troupe p50 "
                  f"{row['troupe']['p50']:.2f} p99 {row['troupe']['p99']:.2f} ms; added p50 "
                  f"{row['troupe']['p50'] - row['direct']['p50']:+.2f} p99 "
                  f"{row['troupe']['p99'] - row['direct']['p99']:+.2f} ms; failed "
                  f"{row['direct']['failed']} / {row['troupe']['failed']}", flush=True)
        added = {p: statistics.median(x["troupe"][p] - x["direct"][p] for x in rows)
                 for p in ("p50", "p90", "p99")}
        results["ttft"] = {"concurrency": args.ttft_concurrency, "mode": args.ttft_mode,
                           "itl_ms": itl, "tokens": tokens, "rounds": rows, "added_ms": added}
        print(f"ttft at {args.ttft_concurrency} streams through the gateway ({args.ttft_mode}, "
              f"a token every {itl} ms): added by the gateway (median of rounds) "
              f"p50 {added['p50']:+.2f} ms, p90 {added['p90']:+.2f} ms, p99 {added['p99']:+.2f} ms")
    finally:
        procs.stop_all()


def prompts(args, results):
    """Requests/s with 100 KB prompts against 1 KB prompts."""
    procs = Procs(args.build)
    tmp = tempfile.mkdtemp(prefix="troupe-prompts-")
    worker = FakeWorkers([free_port()], read_body=not args.discarding_worker)
    try:
        gw, gw_proc = procs.troupe(worker.urls, "--max-payload-size", 4 * 1024 * 1024)
        files = {"1KB": prompt_file(tmp, 1000), "100KB": prompt_file(tmp, 100_000)}
        rows = []
        for r in range(args.rounds):
            row = {}
            for target, url in (("direct", worker.urls[0]), ("troupe", gw)):
                for size, path in files.items():
                    cpu0 = cpu_seconds(gw_proc.pid) if target == "troupe" else None
                    s = bench(args.build, "--url", url, "--prompts", path, "--no-stream",
                              "--concurrency", 64, "--duration", args.duration, "--warmup", 1,
                              "--max-tokens", 8, model=FAKE_MODEL)
                    row[f"{target}_{size}"] = s["throughput"]["requests_per_s"]
                    if target == "troupe":  # warm-up included: the gateway served it too
                        row[f"troupe_{size}_cpu_us"] = ((cpu_seconds(gw_proc.pid) - cpu0) * 1e6 /
                                                        max(s["requests"] +
                                                            s["warmup_requests"], 1))
                    if s["failed"]:
                        row[f"{target}_{size}_failed"] = s["failures"]
            rows.append(row)
            print(f"prompts round {r + 1}: " + ", ".join(
                f"{k} {v:.1f} µs" if k.endswith("_cpu_us") else
                f"{k} {v:.0f} req/s" if isinstance(v, float) else f"{k} {v}"
                for k, v in row.items()), flush=True)
        ratio = {t: statistics.median(x[f"{t}_100KB"] / x[f"{t}_1KB"] for x in rows)
                 for t in ("direct", "troupe")}
        cpu = {size: statistics.median(x[f"troupe_{size}_cpu_us"] for x in rows)
               for size in files}
        results["prompts"] = {"rounds": rows, "ratio_100KB_to_1KB": ratio,
                              "troupe_cpu_us_per_request": cpu,
                              "worker": "discards" if args.discarding_worker else "reads"}
        print(f"prompts: 100 KB / 1 KB req/s (median of rounds): troupe {ratio['troupe']:.2f}, "
              f"direct {ratio['direct']:.2f}; the gateway's CPU per request {cpu['1KB']:.1f} µs "
              f"at 1 KB, {cpu['100KB']:.1f} µs at 100 KB")
    finally:
        procs.stop_all()
        worker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", default=["many", "ttft", "prompts"],
                    choices=["many", "ttft", "prompts"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--streams", type=int,
                    help="concurrent streams of `many` (default 10,000, or the most the open-file "
                         "limit allows when it cannot be raised: 9,900 at a hard limit of 20,000)")
    ap.add_argument("--stream-seconds", type=int, default=30)
    ap.add_argument("--sims", type=int, default=4)
    ap.add_argument("--ttft-concurrency", type=int, default=256)
    ap.add_argument("--ttft-mode", choices=["paired", "sequential"], default="paired")
    ap.add_argument("--ttft-itl-ms", type=int, default=500,
                    help="the simulator's gap between tokens in the ttft runs (default 500)")
    ap.add_argument("--ttft-tokens", type=int, default=8,
                    help="tokens per stream in the ttft runs (default 8)")
    ap.add_argument("--ttft-samples", type=int, default=3000,
                    help="paired ttft runs: measured streams per path at least (default 3,000; "
                         "the run lasts as long as they take)")
    ap.add_argument("--discarding-worker", action="store_true",
                    help="prompts: the fake worker lets nginx discard the unread body (4 KB per "
                         "read) instead of reading it whole")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    if "many" in args.what:
        allowed = raise_open_files(2 * (args.streams or 10000) + 4096)
        if args.streams is None:
            args.streams = min(10000, (allowed - 200) // 2)
    results = {}
    for what in args.what:
        {"many": many, "ttft": ttft, "prompts": prompts}[what](args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
