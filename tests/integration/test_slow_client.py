"""Slow clients: a client that reads a stream slower than its worker writes it holds the worker
back instead of growing the gateway's memory (docs/architecture.md, "Slow clients").

A stub worker streams ~34 MB as fast as it can; the client reads the response head and then
nothing, with a small receive buffer. The gateway must stop reading from the worker once
`--stream-buffer-bytes` wait for the client (the worker's writes block: it cannot send the whole
stream), keep its queued-bytes gauge under that bound, and deliver the whole stream intact when
the client reads again. A client that leaves while paused, or a deadline that passes while
paused, frees the worker.

A client that reads nothing at all for `--client-write-timeout-secs` is dropped as if it had left
(the worker's stream is closed, the request logged as 499); one that reads slowly but steadily
gets its whole stream however long it takes.
"""

import http.client
import json
import socket
import time
import unittest

from harness import Gateway, ProcessTestCase, get, model_listed, post, sse_data, wait_until
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


def dechunk(data):
    """The body of a complete chunked transfer coding."""
    body, pos = bytearray(), 0
    while True:
        eol = data.index(b"\r\n", pos)
        size = int(data[pos:eol], 16)
        if size == 0:
            return bytes(body)
        body += data[eol + 2:eol + 2 + size]
        pos = eol + 2 + size + 2


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

    def assert_intact(self, events, count=EVENTS):
        self.assertEqual(len(events), count + 1)
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
        wait_until(lambda: model_listed(gw.url, MODEL),
                   10, what="pair routable")
        s = StalledStream(gw)
        self.assertEqual(s.resp.status, 200)
        self.assert_held_back(gw, decode)
        events = s.events()
        self.assert_intact(events)
        self.assertEqual(json.loads(events[0])["role"], "decode")
        s.leave()
        self.assert_released(gw)


WRITE_TIMEOUT = 1                   # --client-write-timeout-secs of these tests


class ClientWriteTimeoutTest(SlowClientBase, ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.worker = StubWorker(model=MODEL, events=EVENTS, event_bytes=EVENT_BYTES)
        self.addCleanup(self.worker.stop)
        self.gw = self.gateway("--stream-buffer-bytes", BUFFER, "--request-timeout-secs", 30,
                               "--client-write-timeout-secs", WRITE_TIMEOUT,
                               workers=[self.worker])

    def test_a_client_that_reads_nothing_is_dropped_and_frees_its_worker(self):
        s = StalledStream(self.gw)
        started = time.time()
        self.assertEqual(s.resp.status, 200)
        wait_until(lambda: self.worker.aborted == 1, 5, what="worker's stream closed")
        # Not before the client's writes were stuck for the timeout (the socket buffers fill
        # within a fraction of a second), well before the request deadline.
        self.assertGreater(time.time() - started, WRITE_TIMEOUT)
        self.assertEqual(metric(self.gw, "troupe_client_write_timeouts_total"), 1)
        self.assert_released(self.gw)
        # The client's connection is gone: the stream never ends.
        with self.assertRaises((ConnectionError, http.client.IncompleteRead)):
            s.events()
        s.conn.close()
        # Logged and counted as a client that left (the 200 head had gone out), with the reason.
        # (Per-request lines reach the log within the flush interval, services/logs.hpp: wait
        # for the request's summary line, written after the reason.)
        wait_until(lambda: "error=client_closed" in self.gw.output(), 5, what="the summary line")
        lines = self.gw.output().splitlines()
        self.assertEqual(len([l for l in lines if "the client stopped reading" in l]), 1)
        self.assertEqual(len([l for l in lines if "POST /generate" in l and
                              l.endswith("error=client_closed")]), 1)
        errors = [l for l in get(f"http://127.0.0.1:{self.gw.metrics_port}/metrics").text
                  .splitlines() if l.startswith("troupe_router_request_errors_total{")]
        self.assertTrue(any('error_type="client_closed"' in l and l.endswith(" 1")
                            for l in errors), errors)
        # The gateway serves on.
        self.worker.configure(events=3, event_bytes=0)
        self.assertEqual(post(self.gw.url + "/generate", {"text": "again"}).status, 200)

    def test_a_client_that_reads_slowly_but_steadily_gets_its_whole_stream(self):
        events = 768  # 12.6 MB: more than the socket buffers hold, so the gateway holds back
        self.worker.configure(events=events)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        sock.connect(("127.0.0.1", self.gw.port))
        body = json.dumps(BODY).encode()
        sock.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        # The buffers fill; then a read of 16 KiB every 0.2 s for three timeouts. The gateway's
        # write stays blocked all along (the kernel wakes it only once megabytes drained), yet
        # the client acknowledges bytes within every timeout: it is slow, not gone.
        time.sleep(0.5)
        raw = b""
        until = time.time() + 3 * WRITE_TIMEOUT
        while time.time() < until:
            raw += sock.recv(16 * 1024)
            time.sleep(0.2)
        self.assertEqual(metric(self.gw, "troupe_client_write_timeouts_total"), 0)
        self.assertEqual(metric(self.gw, "troupe_client_streams_paused"), 1)
        # The rest at full speed: the whole stream, intact.
        while piece := sock.recv(1024 * 1024):
            raw += piece
        sock.close()
        head, chunked = raw.split(b"\r\n\r\n", 1)
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        self.assert_intact([sse_data(e) for e in dechunk(chunked).decode().split("\n\n")
                            if e.strip()], events)
        self.assertEqual(self.worker.aborted, 0)
        self.assertEqual(metric(self.gw, "troupe_client_write_timeouts_total"), 0)

    def test_a_client_that_never_reads_a_big_answer_is_dropped(self):
        self.worker.configure(answer_bytes=32 * 1024 * 1024)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        sock.connect(("127.0.0.1", self.gw.port))
        sock.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 13\r\n\r\n{\"text\": \"x\"}")
        wait_until(lambda: metric(self.gw, "troupe_client_write_timeouts_total") == 1, 5,
                   what="client dropped")
        # The connection was reset: what the client reads now ends short of the answer.
        sock.settimeout(5)
        received = 0
        try:
            while piece := sock.recv(1024 * 1024):
                received += len(piece)
        except ConnectionError:
            pass
        self.assertLess(received, 32 * 1024 * 1024)
        sock.close()
        self.worker.configure(answer_bytes=0)
        self.assertEqual(post(self.gw.url + "/generate", {"text": "again"}).status, 200)


if __name__ == "__main__":
    unittest.main()
