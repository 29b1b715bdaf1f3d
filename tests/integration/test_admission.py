"""Admission control: --max-concurrent-requests, --queue-size, --queue-timeout-secs,
--rate-limit-tokens-per-second.

A stub worker holds every request until the test lets it go, so the gateway's slots fill up
on cue. With 2 slots and 1 place in the queue: the 3rd request waits (`queued` in
/admin/requests, never at the worker) and completes once a slot frees; the 4th gets 429 at
once in its route's format; a request that waits too long gets 408; a client that leaves the
queue frees its place; routes that make no model work (info, health) never queue; a
prefill/decode request holds one slot, not one per leg. With a rate, a burst of as many requests
as there are slots goes at once and the next one waits for its token. Each test ends with the
worker's load and the admission gauges back at 0.
"""

import json
import re
import socket
import threading
import time
import unittest

from harness import ProcessTestCase, get, model_listed, post, start_refused, wait_until
from stub_worker import StubWorker

MODEL = "stub-model"
MESSAGES = [{"role": "user", "content": "hello"}]


def chat(gw):
    return post(gw.url + "/v1/chat/completions", {"model": MODEL, "messages": MESSAGES})


def anthropic(gw):
    return post(gw.url + "/v1/messages", {"model": MODEL, "max_tokens": 8, "messages": MESSAGES})


class Background:
    """A request sent from a thread; `result()` waits for its response."""

    def __init__(self, send, gw):
        self._out = {}
        self._thread = threading.Thread(target=lambda: self._out.update(r=send(gw)), daemon=True)
        self._thread.start()

    def result(self, timeout=10):
        self._thread.join(timeout)
        assert "r" in self._out, "no response"
        return self._out["r"]


def admission(gw):
    """{series: value} of the troupe_admission_* samples, series written `name{k=v,...}`."""
    text = get(f"http://127.0.0.1:{gw.metrics_port}/metrics").text
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(troupe_admission_\w+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            labels = ",".join(f"{k}={v}" for k, v in re.findall(r'(\w+)="([^"]*)"', m[2] or ""))
            out[m[1] + ("{" + labels + "}" if labels else "")] = float(m[3])
    return out


def tracked(gw):
    return get(gw.url + "/admin/requests").json()["requests"]


def queued(gw):
    return [r for r in tracked(gw) if r["phase"] == "queued"]


class AdmissionTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.stub = StubWorker(model=MODEL, hold=True)
        self.addCleanup(self.stub.stop)

    def start_gateway(self, *flags, queue_timeout=10):
        self.gw = self.gateway("--max-concurrent-requests", 2, "--queue-size", 1,
                               "--queue-timeout-secs", queue_timeout, *flags,
                               workers=[self.stub])
        return self.gw

    def fill_slots(self):
        """Two requests held at the worker: every slot taken."""
        running = [Background(chat, self.gw), Background(chat, self.gw)]
        wait_until(lambda: self.stub.held == 2, 5, what="two requests at the worker")
        return running

    def assert_back_to_rest(self):
        """Nothing in flight: the worker's load, the tracker and the gauges are at 0."""
        wait_until(lambda: self.stub.active == 0, 5, what="worker idle")
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 5, what="loads at 0")
        wait_until(lambda: not tracked(self.gw), 5, what="no request tracked")
        m = admission(self.gw)
        self.assertEqual(m["troupe_admission_active"], 0, m)
        self.assertEqual(m["troupe_admission_queued"], 0, m)

    def test_the_third_waits_for_a_slot_and_the_fourth_is_refused_in_its_format(self):
        gw = self.start_gateway()
        a, b = self.fill_slots()
        c = Background(chat, gw)
        wait_until(lambda: queued(gw), 5, what="a queued request")
        entry = queued(gw)[0]
        self.assertEqual((entry["route"], entry["workers"]), ("chat_completions", []))
        m = admission(gw)
        self.assertEqual((m["troupe_admission_active"], m["troupe_admission_queued"]), (2, 1))

        # The queue is full: refused at once, in the route's own error format.
        d = chat(gw)
        self.assertEqual(d.status, 429, d)
        self.assertEqual(d.headers.get("retry-after"), "1")
        self.assertEqual(d.json()["error"]["type"], "rate_limit_error")
        self.assertEqual(d.json()["error"]["code"], "too_many_requests")
        e = anthropic(gw)
        self.assertEqual(e.status, 429, e)
        self.assertEqual(e.json()["type"], "error")
        self.assertEqual(e.json()["error"]["type"], "rate_limit_error")
        # Routes that make no model work do not queue.
        self.assertEqual(get(gw.url + "/get_model_info").status, 200)
        self.assertEqual(get(gw.url + "/health").status, 200)
        self.assertEqual(len(self.stub.requests("POST")), 2, "only a and b reached the worker")

        # A slot frees: the queued request takes it.
        self.stub.release(1)
        wait_until(lambda: len(self.stub.requests("POST")) == 3 and self.stub.held == 2, 5,
                   what="the queued request at the worker")
        self.assertFalse(queued(gw))
        self.stub.release(2)
        for r in (a, b, c):
            self.assertEqual(r.result().status, 200)
        self.assert_back_to_rest()
        m = admission(gw)
        self.assertEqual(m["troupe_admission_admitted_total{path=immediate}"], 2, m)
        self.assertEqual(m["troupe_admission_admitted_total{path=queued}"], 1, m)
        self.assertEqual(m["troupe_admission_rejected_total{reason=queue_full}"], 2, m)
        self.assertEqual(m["troupe_admission_queue_wait_seconds_count"], 1, m)
        self.assertEqual(m["troupe_admission_limit{kind=concurrent}"], 2, m)

    def test_a_request_waiting_past_the_queue_timeout_gets_408_in_its_format(self):
        gw = self.start_gateway(queue_timeout=0.5)
        running = self.fill_slots()
        started = time.time()
        r = anthropic(gw)
        waited = time.time() - started
        self.assertEqual(r.status, 408, r)
        self.assertEqual(r.json()["type"], "error")
        self.assertEqual(r.json()["error"]["type"], "timeout_error")
        self.assertGreaterEqual(waited, 0.45)
        self.assertLess(waited, 5)
        r = chat(gw)
        self.assertEqual(r.status, 408, r)
        self.assertEqual(r.json()["error"]["code"], "queue_timeout")
        self.assertEqual(len(self.stub.requests("POST")), 2, "the timed-out ones never ran")
        self.stub.release(2)
        for b in running:
            self.assertEqual(b.result().status, 200)
        self.assert_back_to_rest()
        self.assertEqual(admission(gw)["troupe_admission_rejected_total{reason=queue_timeout}"], 2)

    def test_a_client_leaving_the_queue_frees_its_place_at_once(self):
        gw = self.start_gateway()
        running = self.fill_slots()
        body = json.dumps({"model": MODEL, "messages": MESSAGES}).encode()
        s = socket.create_connection(("127.0.0.1", gw.port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        wait_until(lambda: queued(gw), 5, what="the request queued")
        s.close()
        wait_until(lambda: not queued(gw), 5, what="the request out of the queue")
        m = admission(gw)
        self.assertEqual((m["troupe_admission_queued"], m["troupe_admission_abandoned_total"]),
                         (0, 1), m)
        # Its place is free: the next request waits instead of being refused.
        d = Background(chat, gw)
        wait_until(lambda: queued(gw), 5, what="the next request queued")
        self.stub.release(3)
        self.assertEqual(d.result().status, 200)
        for b in running:
            self.assertEqual(b.result().status, 200)
        self.assertEqual(len(self.stub.requests("POST")), 3, "the one that left never ran")
        self.assert_back_to_rest()


class RateLimitTest(ProcessTestCase):
    """--rate-limit-tokens-per-second: a bucket of --max-concurrent-requests tokens, refilled at
    the rate; each admission takes one for good. The worker answers at once, so only the rate
    holds requests back."""

    def setUp(self):
        super().setUp()
        self.stub = StubWorker(model=MODEL)
        self.addCleanup(self.stub.stop)

    def test_a_burst_goes_at_once_and_the_next_waits_for_its_token(self):
        # A token every 2 s: the margin that keeps this test exact on a loaded machine (the
        # three first requests and the checks below take far less).
        gw = self.gateway("--max-concurrent-requests", 3, "--rate-limit-tokens-per-second", 0.5,
                          "--queue-size", 5, workers=[self.stub])
        for _ in range(3):
            self.assertEqual(chat(gw).status, 200)
        m = admission(gw)
        self.assertEqual(m["troupe_admission_limit{kind=rate}"], 0.5, m)
        self.assertLess(m["troupe_admission_rate_tokens"], 1, m)
        # The slots are free, the bucket is empty: the fourth waits for the next token.
        fourth = Background(chat, gw)
        wait_until(lambda: queued(gw), 5, what="the fourth request queued")
        self.assertEqual(len(self.stub.requests("POST")), 3)
        self.assertEqual(fourth.result().status, 200)
        self.assertEqual(len(self.stub.requests("POST")), 4)
        m = admission(gw)
        self.assertEqual(m["troupe_admission_admitted_total{path=immediate}"], 3, m)
        self.assertEqual(m["troupe_admission_admitted_total{path=queued}"], 1, m)
        self.assertEqual(m["troupe_admission_queue_wait_seconds_count"], 1, m)
        # It waited for its token: up to 2 s, more than nothing.
        self.assertGreater(m["troupe_admission_queue_wait_seconds_sum"], 0.05, m)
        wait_until(lambda: not tracked(gw), 5, what="no request tracked")
        self.assertEqual(admission(gw)["troupe_admission_active"], 0)

    def test_without_a_queue_the_request_past_the_burst_is_refused(self):
        gw = self.gateway("--max-concurrent-requests", 2, "--rate-limit-tokens-per-second", 0.2,
                          "--queue-size", 0, workers=[self.stub])
        self.assertEqual(chat(gw).status, 200)
        self.assertEqual(chat(gw).status, 200)
        r = anthropic(gw)
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.json()["error"]["type"], "rate_limit_error")
        self.assertIn("0.2 admitted per second", r.json()["error"]["message"])
        self.assertEqual(len(self.stub.requests("POST")), 2)

    def test_a_rate_needs_a_bucket(self):
        code, stderr = start_refused("--rate-limit-tokens-per-second", 5)
        self.assertEqual(code, 2, stderr)
        self.assertIn("needs --max-concurrent-requests", stderr)


class PdAdmissionTest(ProcessTestCase):
    def test_a_prefill_decode_request_holds_one_slot(self):
        prefill = StubWorker(role="prefill", model=MODEL, hold=True)
        decode = StubWorker(role="decode", model=MODEL, hold=True)
        self.addCleanup(prefill.stop)
        self.addCleanup(decode.stop)
        gw = self.gateway("--pd-disaggregation", "--prefill", prefill.url, "none", "--decode",
                          decode.url, "--max-concurrent-requests", 1, "--queue-size", 0)
        wait_until(lambda: model_listed(gw.url, MODEL),
                   10, what="the pair routable")
        pair = Background(chat, gw)
        wait_until(lambda: prefill.held == 1 and decode.held == 1, 5, what="both legs dispatched")
        self.assertEqual(admission(gw)["troupe_admission_active"], 1)
        self.assertEqual(chat(gw).status, 429)  # one slot, taken by the pair
        prefill.release(1)
        decode.release(1)
        self.assertEqual(pair.result().status, 200)
        wait_until(lambda: admission(gw)["troupe_admission_active"] == 0, 5, what="slot back")
        prefill.release(1)
        decode.release(1)
        self.assertEqual(chat(gw).status, 200)  # the slot is free again


if __name__ == "__main__":
    unittest.main()
