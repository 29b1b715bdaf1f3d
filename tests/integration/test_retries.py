"""Retries on a worker's retryable status: 408, 429, 500, 502, 503 and 504 (smg's list).

A worker that answers one of them has not done the work, and the answer is held back from the
client: after a backoff (--retry-initial-backoff-ms, growing by --retry-backoff-multiplier up
to --retry-max-backoff-ms, with --retry-jitter-factor) another worker gets the request. When no
other worker can be tried, the client gets the last worker's own answer in its route's format.
Other statuses (400, 404, ...) are relayed at once; --disable-retries relays every answer as it
comes. Recording stub workers show who received what.
"""

import re
import threading
import time
import unittest

from harness import (ProcessTestCase, Stream, assert_each_refused, get, post, sse_data,
                     wait_until)
from stub_worker import StubWorker

MODEL = "stub-model"
CHAT = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


def retries(gw):
    """troupe_router_retries_total by reason."""
    text = get(f"http://127.0.0.1:{gw.metrics_port}/metrics").text
    return {m[1]: float(m[2]) for m in
            re.finditer(r'^troupe_router_retries_total\{reason="(\w+)"\} (\S+)$', text, re.M)}


def chat(gw, body=CHAT):
    return post(gw.url + "/v1/chat/completions", body)


class RetryOnStatusTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.a = StubWorker(model=MODEL)
        self.b = StubWorker(model=MODEL)
        for s in (self.a, self.b):
            self.addCleanup(s.stop)

    def start_gateway(self, *flags):
        # round_robin starts at the first worker: `a` answers first.
        self.gw = self.gateway("--policy", "round_robin", "--retry-jitter-factor", 0, *flags,
                               workers=[self.a, self.b])
        # Readiness needs one routable worker; a retry needs the other one too (a request sent
        # before the second's models were discovered had nowhere to go again: seen once).
        wait_until(lambda: all(w.get("routable") for w in self.gw.workers()), 10,
                   what="both workers routable")
        return self.gw

    def first_and_second(self):
        """The stubs in the order round_robin gives the next request to them."""
        n_a = len(self.a.requests("POST"))
        n_b = len(self.b.requests("POST"))
        r = chat(self.gw)
        self.assertEqual(r.status, 200, r)
        return (self.a, self.b) if len(self.a.requests("POST")) > n_a else (self.b, self.a)

    def assert_loads_zero(self):
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 5, what="loads at 0")

    def test_each_retryable_status_goes_to_another_worker(self):
        self.start_gateway("--retry-initial-backoff-ms", 0)
        for status in (408, 429, 500, 502, 503, 504):
            with self.subTest(status=status):
                failing, healthy = self.first_and_second()
                # The next request goes to `healthy` first; make it the failing one.
                failing, healthy = healthy, failing
                failing.configure(status=status, error_message=f"busy {status}")
                healthy.configure(status=200)
                before_f = len(failing.requests("POST"))
                before_h = len(healthy.requests("POST"))
                r = chat(self.gw)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json()["role"], "regular")
                self.assertEqual(len(failing.requests("POST")), before_f + 1)
                self.assertEqual(len(healthy.requests("POST")), before_h + 1)
                # The second worker got the same request, body for body.
                self.assertEqual(failing.requests("POST")[-1]["body"],
                                 healthy.requests("POST")[-1]["body"])
                failing.configure(status=200, error_message=None)
        self.assert_loads_zero()
        self.assertEqual(retries(self.gw), {"status": 6.0, "connect": 0.0})

    def test_a_stream_is_retried_before_its_first_byte(self):
        self.start_gateway("--retry-initial-backoff-ms", 0)
        failing, healthy = self.first_and_second()
        failing, healthy = healthy, failing
        failing.configure(status=503)
        before_f = len(failing.requests("POST"))
        before_h = len(healthy.requests("POST"))
        s = Stream(self.gw.url + "/v1/chat/completions", dict(CHAT, stream=True))
        self.assertEqual(s.status, 200)
        events = [sse_data(e) for e in s.events()]
        s.close()
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual(len(failing.requests("POST")), before_f + 1)
        self.assertEqual(len(healthy.requests("POST")), before_h + 1)
        self.assert_loads_zero()

    def test_when_every_worker_refuses_the_client_gets_the_last_answer(self):
        self.start_gateway("--retry-initial-backoff-ms", 0)
        self.a.configure(status=503, error_message="a is overloaded")
        self.b.configure(status=429, error_message="b is rate limited")
        r = chat(self.gw)
        self.assertIn(r.status, (429, 503), r)
        last = "b is rate limited" if r.status == 429 else "a is overloaded"
        self.assertIn(last, r.json()["error"]["message"])
        self.assertEqual(len(self.a.requests("POST")) + len(self.b.requests("POST")), 2)
        # In the Anthropic route's own format too.
        r = post(self.gw.url + "/v1/messages", CHAT)
        self.assertIn(r.status, (429, 503), r)
        self.assertEqual(r.json()["type"], "error")
        self.assert_loads_zero()

    def test_other_statuses_are_relayed_at_once(self):
        self.start_gateway("--retry-initial-backoff-ms", 0)
        self.a.configure(status=400, error_message="bad max_tokens")
        self.b.configure(status=400, error_message="bad max_tokens")
        r = chat(self.gw)
        self.assertEqual(r.status, 400, r)
        self.assertIn("bad max_tokens", r.json()["error"]["message"])
        self.assertEqual(len(self.a.requests("POST")) + len(self.b.requests("POST")), 1)

    def test_the_backoff_is_waited_and_shows_as_a_phase(self):
        self.start_gateway("--retry-initial-backoff-ms", 800)
        second, first = self.first_and_second()  # the next request goes to `first`
        first.configure(status=503)
        second.configure(status=503, hold=True)  # holds the retry at the second worker
        results = {}

        def send():
            t0 = time.time()
            results["r"] = chat(self.gw)
            results["took"] = time.time() - t0
        t = threading.Thread(target=send)
        t.start()
        try:
            def backing_off():
                reqs = get(self.gw.url + "/admin/requests").json()["requests"]
                return reqs and reqs[0]["phase"] == "backing_off" and reqs[0]
            entry = wait_until(backing_off, 5, what="phase backing_off")
            self.assertEqual(len(entry["workers"]), 1)
            wait_until(lambda: second.held == 1, 5, what="the retry at the other worker")
        finally:
            second.release(1)
            t.join(10)
        self.assertEqual(results["r"].status, 503)
        self.assertGreaterEqual(results["took"], 0.75)
        self.assert_loads_zero()

    def test_a_backoff_past_the_deadline_answers_at_once(self):
        self.start_gateway("--retry-initial-backoff-ms", 60000, "--request-timeout-secs", 5)
        self.a.configure(status=503, error_message="a is overloaded")
        self.b.configure(status=503, error_message="b is overloaded")
        t0 = time.time()
        r = chat(self.gw)
        self.assertEqual(r.status, 503, r)
        self.assertLess(time.time() - t0, 2)
        self.assertEqual(len(self.a.requests("POST")) + len(self.b.requests("POST")), 1)

    def test_disable_retries_relays_the_first_answer(self):
        self.start_gateway("--disable-retries")
        self.a.configure(status=503, error_message="a is overloaded")
        self.b.configure(status=503, error_message="b is overloaded")
        r = chat(self.gw)
        self.assertEqual(r.status, 503, r)
        self.assertEqual(len(self.a.requests("POST")) + len(self.b.requests("POST")), 1)


class BreakerFlagTest(ProcessTestCase):
    """--disable-circuit-breaker: failures still count, the worker stays in rotation."""

    def run_failures(self, *flags):
        stub = StubWorker(model=MODEL, status=500)
        self.addCleanup(stub.stop)
        gw = self.gateway("--cb-failure-threshold", 1, "--disable-retries", *flags,
                          workers=[stub])
        statuses = [chat(gw).status for _ in range(3)]
        return gw, stub, statuses

    def test_the_breaker_opens_without_the_flag(self):
        gw, stub, statuses = self.run_failures()
        self.assertEqual(statuses[0], 500)
        self.assertEqual(statuses[1:], [503, 503])  # no routable worker
        self.assertEqual(len(stub.requests("POST")), 1)
        self.assertEqual(gw.workers()[0]["circuit_breaker"], "open")

    def test_with_the_flag_it_never_opens(self):
        gw, stub, statuses = self.run_failures("--disable-circuit-breaker")
        self.assertEqual(statuses, [500, 500, 500])
        self.assertEqual(len(stub.requests("POST")), 3)
        w = gw.workers()[0]
        self.assertEqual((w["circuit_breaker"], w["failures_total"]), ("closed", 3))


class RetryFlagsTest(unittest.TestCase):
    def test_bad_values_stop_start_up(self):
        assert_each_refused(self, ["--retry-jitter-factor", "2"],
                            ["--retry-backoff-multiplier", "0.5"],
                            ["--retry-initial-backoff-ms", "-1"])


if __name__ == "__main__":
    unittest.main()
