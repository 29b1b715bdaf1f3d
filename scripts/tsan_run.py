#!/usr/bin/env python3
"""The run of scripts/tsan.sh: a simulator and `troupe --io-threads 2` built with
ThreadSanitizer, troupe-bench at c=64 streamed and not, troupe stopped with SIGTERM, and TSan's
reports sorted. CAF comes from Debian without TSan's instrumentation: a message or an actor's
state handed from one io thread to another through CAF's mailbox shows as a race (the
synchronisation is inside libcaf_core, where TSan cannot see it). Those are counted as CAF
hand-offs; any other report, a failed bench run or a troupe that does not stop fails the run.

Usage: scripts/tsan_run.py BUILD_DIR [--duration 3]
Logs and reports: BUILD_DIR/tsan-run/.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from loopback import Processes, app_binary, free_port, wait_http  # noqa: E402

# Where a report shows a hand-off that happened in libcaf_core: a message built on one thread
# and read on another, an actor's state first touched where CAF started it, or CAF's shutdown
# (the actor system's destructor against CAF's own scheduler worker, which runs actors only
# after the io threads handed scheduling back, gateway/asio_scheduler.cpp).
CAF_HANDOFF = re.compile(r"mailbox_element|make_mailbox_element|init_fun_factory|"
                         r"scheduled_actor::activate|stateful_actor|type_erased_tuple|tuple_vals|"
                         r"scoped_actor::scoped_actor|caf::scheduler::worker<|"
                         r"actor_system::~actor_system")


def sort_reports(run_dir):
    """TSan's reports of troupe: (CAF hand-offs, the others)."""
    text = "".join(open(f, errors="replace").read()
                   for f in glob.glob(os.path.join(run_dir, "troupe-tsan*")))
    reports = [r for r in text.split("==================") if "WARNING: ThreadSanitizer" in r]
    caf = [r for r in reports if CAF_HANDOFF.search(r)]
    return caf, [r for r in reports if not CAF_HANDOFF.search(r)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--duration", type=float, default=3)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    troupe, sim_bin, bench = (app_binary(build, a)
                              for a in ("troupe", "troupe-sim", "troupe-bench"))
    run_dir = os.path.join(build, "tsan-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)

    failed = False
    procs = Processes()
    try:
        sim_port = free_port()
        # The simulator is not under test: its reports go elsewhere.
        os.environ["TSAN_OPTIONS"] = f"log_path={run_dir}/sim-tsan"
        procs.start([sim_bin, "--port", sim_port,
                     "--request-log-size", 0, "--log-level", "warn"])
        sim = f"http://127.0.0.1:{sim_port}"
        wait_http(f"{sim}/health", timeout=60)
        port = free_port()
        os.environ["TSAN_OPTIONS"] = f"halt_on_error=0 history_size=4 log_path={run_dir}/troupe-tsan"
        log = open(os.path.join(run_dir, "troupe.log"), "w")
        gateway = procs.start(
            [troupe, "--port", port, "--io-threads", 2,
             "--prometheus-port", 0, "--worker-urls", sim, "--log-level", "warn"], log=log)
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/readiness", timeout=60)

        for mode in ("--no-stream", "--stream"):
            p = subprocess.run([bench, "--url", base,
                                "--concurrency", "64", "--duration", str(args.duration),
                                "--timeout", "60", mode, "--progress", "off"],
                               capture_output=True, text=True)
            with open(os.path.join(run_dir, f"bench{mode}.log"), "w") as f:
                f.write(p.stdout + p.stderr)
            print("".join(l for l in p.stdout.splitlines(True) if "requests in" in l), end="")
            if p.returncode != 0:
                print(f"tsan_run: troupe-bench {mode} failed (see {run_dir})", file=sys.stderr)
                failed = True
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(20)
        except subprocess.TimeoutExpired:
            print("tsan_run: troupe did not stop within 20 s of SIGTERM", file=sys.stderr)
            failed = True
    finally:
        procs.stop_all()

    caf, other = sort_reports(run_dir)
    print(f"tsan_run: {len(caf) + len(other)} reports: {len(caf)} CAF hand-offs, "
          f"{len(other)} others")
    for r in other[:5]:
        frames = [l.strip() for l in r.splitlines() if re.match(r"\s+#[0-3] ", l)]
        print("----\n" + "\n".join(f[:200] for f in frames[:8]))
    print(f"tsan_run: reports and logs in {run_dir}")
    sys.exit(1 if failed or other else 0)


if __name__ == "__main__":
    main()
