"""Workers added and removed while requests flow (docs/api.md: "DELETE /workers/{id}: its
requests in flight finish"): no request fails because its worker was removed; a removed
worker's streams finish; new requests stop going to it.

Load comes from troupe-bench (TROUPE_BENCH_BIN, or ./build/apps/troupe-bench).
"""

import json
import os
import subprocess
import tempfile
import threading
import time

from harness import ROOT, ProcessTestCase, Stream, delete, get, post, sse_data, wait_until

BENCH_BIN = os.environ.get(
    "TROUPE_BENCH_BIN", os.path.join(ROOT, "build", "apps", "troupe-bench", "troupe-bench"))
MODEL = "sim-model"


def register(gw, sim):
    r = post(gw.url + "/workers", {"url": sim.url, "model_id": MODEL})
    assert r.status == 202, r
    return r.json()["id"]


def routable(gw, wid):
    r = get(gw.url + f"/workers/{wid}")
    return r.status == 200 and r.json()["routable"]


class Churner(threading.Thread):
    """Removes and adds back the gateway's workers, one after the other, `rate` operations a
    second: every removal hits a worker that is taking requests. A worker added back is
    routable only once its first health check passed (~1 ms here); the next removal waits for
    that, so at least three workers are routable at all times, whatever the machine's load
    (a CI run once saw the checks of re-added workers lag behind the churn until none was
    routable, and 503 "no healthy worker" answers, which are right, failed the test)."""

    def __init__(self, gw, sims, ids, rate):
        super().__init__(daemon=True)
        self.gw, self.sims, self.ids, self.rate = gw, sims, dict(ids), rate
        self.done = threading.Event()
        self.removals = 0
        self.errors = []

    def run(self):
        i = 0
        while not self.done.is_set():
            sim = self.sims[i % len(self.sims)]
            i += 1
            try:
                r = delete(self.gw.url + f"/workers/{self.ids[sim.url]}")
                if r.status != 200:
                    self.errors.append(f"DELETE: {r.status}")
                self.removals += 1
                self.done.wait(0.5 / self.rate)
                self.ids[sim.url] = wid = register(self.gw, sim)
                wait_until(lambda: routable(self.gw, wid), 5, interval=0.002,
                           what=f"re-added worker {wid} routable")
            except (OSError, AssertionError) as e:
                self.errors.append(repr(e))
            self.done.wait(0.5 / self.rate)


class ChurnTest(ProcessTestCase):
    def test_requests_never_fail_because_their_worker_was_removed(self):
        sims = [self.sim("--request-log-size", 0) for _ in range(4)]
        gw = self.gateway("--health-check-interval-secs", 1)
        ids = {s.url: register(gw, s) for s in sims}
        for wid in ids.values():
            wait_until(lambda: routable(gw, wid), 10, what="worker routable")
        actors_before = gw.running_actors()
        churner = Churner(gw, sims, ids, rate=50)
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            churner.start()
            try:
                args = [BENCH_BIN, "--url", gw.url, "--model", MODEL, "--no-stream",
                        "--concurrency", 16, "--duration", 4, "--max-tokens", 4,
                        "--system-prompts", 0, "--user-tokens", 20, "--progress", "off",
                        "--json", report]
                p = subprocess.run([str(a) for a in args],
                    capture_output=True, text=True, timeout=60)
            finally:
                churner.done.set()
                churner.join()
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(report) as f:
                stage = json.load(f)["stages"][0]
        self.assertEqual(churner.errors, [])
        self.assertGreater(churner.removals, 50)
        self.assertGreater(stage["requests"], 500)
        # Retries may move a request to another worker, but none may fail: the fleet always had
        # at least three routable workers.
        self.assertEqual(stage["failures"], {}, stage["first_errors"])
        self.assertEqual(stage["ok"], stage["requests"])
        # Nothing left behind: every proxy's in-flight count came back to zero.
        wait_until(lambda: all(w["load"] == 0 for w in gw.workers()), 10, what="loads back to 0")
        # The proxies of removed workers end once nothing refers to them: no actor piles up.
        wait_until(lambda: gw.running_actors() <= actors_before, 10,
                   what=f"running actors back to {actors_before}")

    def test_a_removed_workers_stream_finishes_and_new_requests_avoid_it(self):
        slow = self.sim("--itl-ms", 40, "--output-tokens", 25, zero_latency=False)
        other = self.sim("--output-tokens", 25)
        gw = self.gateway()
        slow_id, other_id = register(gw, slow), register(gw, other)
        for wid in (slow_id, other_id):
            wait_until(lambda: routable(gw, wid), 10, what="worker routable")
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 25, "stream": True}
        # Round robin: find the stream that went to the slow worker.
        streams = [Stream(gw.url + "/v1/chat/completions", body) for _ in range(2)]
        try:
            wait_until(lambda: slow.stats()["active"] == 1, 5, what="a stream at the slow worker")
            self.assertEqual(delete(gw.url + f"/workers/{slow_id}").status, 200)
            served_before = slow.stats()["by_path"].get("/v1/chat/completions", 0)
            # New requests go to the other worker only.
            for _ in range(6):
                r = post(gw.url + "/v1/chat/completions",
                         {"model": MODEL, "messages": [{"role": "user", "content": "x"}]})
                self.assertEqual(r.status, 200, r)
            self.assertEqual(slow.stats()["by_path"]["/v1/chat/completions"], served_before)
            # The removed worker's stream runs to its end: 25 tokens, then [DONE].
            for s in streams:
                self.assertEqual(s.status, 200)
                events = [sse_data(e) for e in s.events()]
                self.assertEqual(events[-1], "[DONE]")
                deltas = [json.loads(e)["choices"][0]["delta"].get("content")
                          for e in events[:-1] if json.loads(e)["choices"]]
                self.assertEqual(len([d for d in deltas if d]), 25)
        finally:
            for s in streams:
                s.close()
        self.assertEqual(slow.stats()["active"], 0)
        self.assertEqual(get(gw.url + f"/workers/{slow_id}").status, 404)
