#!/usr/bin/env python3
"""The training run of a profile-guided build (scripts/build-pgo.sh): an instrumented `troupe`
in front of two simulated workers, driven through the requests a production node serves most
(OpenAI chat streamed and not, Anthropic messages, Responses, the model list, health, metrics,
a refused request), then stopped with SIGTERM so that it writes its profile. Troupe's log goes
to BUILD_DIR/pgo-train.log.

Usage: scripts/pgo_train.py BUILD_DIR [--seconds 4]
BUILD_DIR holds the instrumented apps/troupe/troupe, apps/troupe-sim/troupe-sim and
apps/troupe-bench/troupe-bench.
"""

import argparse
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from loopback import Processes, app_binary, free_port, wait_http  # noqa: E402

MODEL = "pgo-model"


def get(url, data=None):
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=4)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    troupe, sim, bench = (app_binary(build, a) for a in ("troupe", "troupe-sim", "troupe-bench"))

    procs = Processes()
    log = open(os.path.join(build, "pgo-train.log"), "w")
    try:
        sims = []
        for _ in range(2):
            port = free_port()
            procs.start([sim, "--port", port, "--model-id", MODEL, "--ttft-base-ms", 0,
                         "--prefill-us-per-token", 0, "--itl-ms", 0, "--request-log-size", 0])
            sims.append(f"http://127.0.0.1:{port}")
            wait_http(f"{sims[-1]}/health")
        port = free_port()
        gateway = procs.start(
            [troupe, "--port", port, "--prometheus-port", 0, "--worker-urls"] + sims, log=log)
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/readiness")

        # What a node serves most, each for a few seconds (the simulators answer at once).
        runs = [
            ["--api", "chat", "--no-stream", "--concurrency", "32", "--max-tokens", "8"],
            ["--api", "chat", "--stream", "--concurrency", "16", "--max-tokens", "32"],
            ["--api", "messages", "--stream", "--concurrency", "8", "--max-tokens", "16"],
            ["--api", "messages", "--no-stream", "--concurrency", "8", "--max-tokens", "8"],
            ["--api", "responses", "--no-stream", "--concurrency", "8", "--max-tokens", "8"],
            ["--api", "responses", "--stream", "--concurrency", "8", "--max-tokens", "16"],
        ]
        for run in runs:
            subprocess.run([bench, "--url", base, "--model", MODEL, "--duration",
                            str(args.seconds), "--progress", "off", "--users", "8",
                            "--system-prompt-tokens", "200"] + run,
                           stdout=subprocess.DEVNULL, check=True)
            print(f"trained: {' '.join(run)}", flush=True)
        for _ in range(50):
            get(f"{base}/v1/models")
            get(f"{base}/health")
            get(f"{base}/metrics")
            get(f"{base}/v1/chat/completions", b'{"model": ')  # refused: 400
        gateway.send_signal(signal.SIGTERM)  # the profile is written at exit
        if gateway.wait(30) != 0:
            sys.exit(f"troupe exited with {gateway.returncode}: see {log.name}")
        print("trained: the profile is written", flush=True)
    finally:
        procs.stop_all()
        log.close()


if __name__ == "__main__":
    main()
