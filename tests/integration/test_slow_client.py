"""Slow clients: a client that reads a stream slower than its worker writes it holds the worker
back instead of growing the gateway's memory (docs/architecture.md, "Slow clients").

A stub worker streams ~34 MB as fast as it can; the client reads the response head and then
nothing, with a small receive buffer. The gateway must stop reading from the worker once
`--stream-buffer-bytes` wait for the client (the worker's writes block: it cannot send the whole
stream), keep its queued-bytes gauge under that bound, and deliver the whole stream intact when
the client reads again. A client that leaves while paused, or a deadline that passes while
paused, frees the worker.
"""

import http.client
import json
import socket
import time
import unittest

from harness import Gateway, ProcessTestCase, get, post, sse_data, wait_until
from stub_worker import StubWorker

MODEL = "stub-model"
EVENT_BYTES = 16 * 1024
EVENTS = 2048                       # ~34 MB: far beyond what the socket buffers absorb
BUFFER = 512 * 1024                 # --stream-buffer-bytes of these tests
REPORT_STEP = 64 * 1024             # the gauge counts each connection in whole steps
READ_AHEAD = 64 * 1024              # at most one read of the worker's stream past the mark
BODY = {"text": "x", "stream": True}


def metric(gw, name):
    for line in get(f"http://127.0.0.1:{gw.metrics_port}/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def settled(read, pause=0.3):
    """True when `read()` did not change over `pause` seconds."""
    before = read()
    time.sleep(pause)
    return read() == before


class StalledStream:
    """A streamed request whose client reads the response head, then nothing until asked to
    (with a small receive buffer, so the kernel holds little for it)."""

    def __init__(self, gw, path="/generate", body=BODY):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        sock.connect(("127.0.0.1", gw.port))
        self.conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
        self.conn.sock = sock
        self.conn.request("POST", path, body=json.dumps(body),
                          headers={"Content-Type": "application/json"})
        self.resp = self.conn.getresponse()

    def events(self):
        """Reads the rest of the stream: its events' data, in order."""
        raw = self.resp.read().decode()
        return [sse_data(e) for e in raw.split("\n\n") if e.strip()]

    def leave(self):
        self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()


class SlowClientBase:
    def assert_held_back(self, gw, worker):
        """The gateway paused the stream: the worker is blocked short of the end, and what the
        gateway queues for the client stays under the bound."""
        wait_until(lambda: metric(gw, "troupe_client_streams_paused") == 1, 10,
                   what="stream paused")
        wait_until(lambda: settled(lambda: worker.sent_bytes), 10, what="worker blocked")
        total = EVENTS * EVENT_BYTES
        self.assertLess(worker.sent_bytes, total, "the worker could send the whole stream")
        self.assertLessEqual(metric(gw, "troupe_client_queued_bytes"), BUFFER + READ_AHEAD)
        self.assertGreaterEqual(metric(gw, "troupe_client_stream_pauses_total"), 1)

    def assert_intact(self, events):
        self.assertEqual(len(events), EVENTS + 1)
        self.assertEqual(events[-1], "[DONE]")
        for i, data in enumerate(events[:-1]):
            if json.loads(data)["text"] != f"tok{i}".ljust(EVENT_BYTES, "."):
                self.fail(f"event {i} is not the worker's event {i}")

    def assert_released(self, gw):
        wait_until(lambda: all(v == 0 for v in gw.loads().values()), 5, what="loads back to 0")
        wait_until(lambda: metric(gw, "troupe_client_streams_paused") == 0, 5,
                   what="no stream paused")
        wait_until(lambda: metric(gw, "troupe_client_queued_bytes") == 0, 5,
                   what="nothing queued")


class SlowClientTest(SlowClientBase, ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.worker = StubWorker(model=MODEL, events=EVENTS, event_bytes=EVENT_BYTES)
        self.addCleanup(self.worker.stop)
        self.gw = self.gateway("--stream-buffer-bytes", BUFFER, "--request-timeout-secs", 30,
                               workers=[self.worker])

    def test_a_client_that_stops_reading_holds_the_worker_back_and_then_gets_everything(self):
        s = StalledStream(self.gw)
        self.assertEqual(s.resp.status, 200)
        self.assert_held_back(self.gw, self.worker)
        self.assertEqual(list(self.gw.loads().values()), [1])
        self.assert_intact(s.events())
        s.leave()
        self.assertEqual(self.worker.aborted, 0)
        self.assert_released(self.gw)

    def test_a_client_that_leaves_while_paused_frees_the_worker(self):
        s = StalledStream(self.gw)
        self.assert_held_back(self.gw, self.worker)
        s.leave()
        wait_until(lambda: self.worker.aborted == 1, 5, what="worker's stream closed")
        self.assert_released(self.gw)
        # The gateway serves on.
        self.worker.configure(events=3, event_bytes=0)
        self.assertEqual(post(self.gw.url + "/generate", {"text": "again"}).status, 200)


class SlowClientDeadlineTest(SlowClientBase, ProcessTestCase):
    def test_the_request_deadline_still_ends_a_paused_stream(self):
        worker = StubWorker(model=MODEL, events=EVENTS, event_bytes=EVENT_BYTES)
        self.addCleanup(worker.stop)
        gw = self.gateway("--stream-buffer-bytes", BUFFER, "--request-timeout-secs", 1,
                          workers=[worker])
        s = StalledStream(gw)
        started = time.time()
        wait_until(lambda: worker.aborted == 1, 5, what="worker's stream closed at the deadline")
        self.assertLess(time.time() - started, 3)
        wait_until(lambda: all(v == 0 for v in gw.loads().values()), 5, what="loads back to 0")
        self.assertEqual(metric(gw, "troupe_client_streams_paused"), 0)
        # What was queued still reaches the client, then an error event ends the stream.
        events = s.events()
        self.assertIn("error", json.loads(events[-1]))
        s.leave()
        self.assert_released(gw)


class SlowClientPdTest(SlowClientBase, ProcessTestCase):
    def test_the_decode_stream_is_paced_through_the_gate(self):
        prefill = StubWorker(role="prefill", model=MODEL)
        decode = StubWorker(role="decode", model=MODEL, events=EVENTS, event_bytes=EVENT_BYTES)
        self.addCleanup(prefill.stop)
        self.addCleanup(decode.stop)
        gw = self.gateway("--pd-disaggregation", "--prefill", prefill.url, "none",
                          "--decode", decode.url, "--stream-buffer-bytes", BUFFER)
        wait_until(lambda: any(m["id"] == MODEL for m in get(gw.url + "/v1/models").json()["data"]),
                   10, what="pair routable")
        s = StalledStream(gw)
        self.assertEqual(s.resp.status, 200)
        self.assert_held_back(gw, decode)
        events = s.events()
        self.assert_intact(events)
        self.assertEqual(json.loads(events[0])["role"], "decode")
        s.leave()
        self.assert_released(gw)


if __name__ == "__main__":
    unittest.main()
