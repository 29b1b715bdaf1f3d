"""A recording stub worker for integration tests (Python standard library only).

It answers like an inference engine just enough for the gateway to route to it (health, model
discovery, the data-plane paths), records every request it receives, and misbehaves on demand:
an error status, a stall before the response head, a dropped connection, a slow stream, a
hold until the test lets the request go (`release`), a long stream of big events
(`event_bytes`), a big non-streamed answer (`answer_bytes`). It notices when the gateway closes a connection it is stalling or streaming on
(`aborted`, and `"aborted": True` in that request's record), and counts the stream bytes it managed to send (`sent_bytes`).

In a test:  stub = StubWorker(role="prefill"); ...; stub.configure(status=500); stub.stop()
By hand:    python3 stub_worker.py --port 8100 --role decode
"""

import argparse
import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULTS = {
    "status": 200,         # status of data-plane answers
    "stall_ms": 0,         # wait before the response head
    "drop": False,         # close the connection instead of answering
    "events": 3,           # events of a streamed answer (before [DONE])
    "event_delay_ms": 0,   # between streamed events
    "meta_info": None,     # merged into every answer object's meta_info
    "error_message": None, # message of an error answer (default names the role)
    "error_event": False,  # a streamed answer reports an error event after its 200 head
    "event_bytes": 0,      # pad each streamed event's text to this many characters
    "answer_bytes": 0,     # pad a non-streamed answer's text to this many characters
    "hold": False,         # each answer waits for a release() before its response head
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, stub):
        self.stub = stub
        super().__init__(addr, _Handler)

    def process_request(self, request, client_address):
        with self.stub._lock:
            self.stub._conns.add(request)
        super().process_request(request, client_address)

    def finish_request(self, request, client_address):
        # TLS: the handshake runs on the connection's own thread, not on the accepting one.
        if hasattr(request, "do_handshake"):
            try:
                request.do_handshake()
            except OSError as e:
                with self.stub._lock:
                    self.stub.handshake_errors.append(str(e))
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        # The gateway closing a connection it gave up on is part of the tests, not an error.
        pass

    def shutdown_request(self, request):
        with self.stub._lock:
            self.stub._conns.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # peer's delayed ACK add 40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass

    # -- helpers --

    @property
    def stub(self):
        return self.server.stub

    def _send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _client_gone(self, timeout):
        """Waits up to `timeout` s; True if the peer closed the connection meanwhile."""
        r, _, _ = select.select([self.connection], [], [], timeout)
        if not r:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, ms):
        """Sleeps `ms` ms unless the peer leaves or the stub stops; True if the peer left."""
        deadline = time.time() + ms / 1000.0
        while not self.stub._stopping.is_set():
            left = deadline - time.time()
            if left <= 0:
                return False
            if self._client_gone(min(left, 0.05)):
                return True
        return True

    def _hold(self):
        """Waits for a release(); True if the peer left (or the stub stops) first."""
        stub = self.stub
        with stub._lock:
            stub._held += 1
        try:
            while not stub._stopping.is_set():
                with stub._lock:
                    if stub._releases > 0:
                        stub._releases -= 1
                        return False
                if self._client_gone(0.02):
                    return True
            return True
        finally:
            with stub._lock:
                stub._held -= 1

    def _answer_object(self, path, index, text):
        obj = {"role": self.stub.role, "path": path, "index": index, "text": text,
               "model": self.stub.model}
        meta = {"id": f"{self.stub.role}-{index}"}
        if self.stub.config["meta_info"]:
            meta.update(self.stub.config["meta_info"])
        obj["meta_info"] = meta
        return obj

    # -- GET --

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/health":
            return self._send_json(200, {"status": "ok"})
        if path == "/v1/models":
            return self._send_json(200, {"object": "list",
                                         "data": [{"id": self.stub.model, "object": "model"}]})
        if path in ("/get_model_info", "/get_server_info", "/health_generate"):
            self.stub._record(self, b"")
            cfg = self.stub.config
            if cfg["status"] != 200 and path == "/health_generate":
                return self._send_json(cfg["status"], {"error": {"message": "unhealthy"}})
            return self._send_json(200, {"role": self.stub.role, "path": path,
                                         "model_path": self.stub.model})
        self._send_json(404, {"error": {"message": f"no route {path}"}})

    # -- POST: the data plane --

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        cfg = dict(self.stub.config)
        self._entry = self.stub._record(self, body)
        self.stub._active_add(1)
        try:
            if cfg["hold"] and self._hold():
                self.stub._aborted_add(self._entry)
                self.close_connection = True
                return
            if cfg["stall_ms"] and self._wait(cfg["stall_ms"]):
                self.stub._aborted_add(self._entry)
                self.close_connection = True
                return
            if cfg["drop"]:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if cfg["status"] != 200:
                msg = cfg["error_message"] or f"{self.stub.role} stub failure"
                return self._send_json(cfg["status"],
                                       {"error": {"message": msg, "type": "server_error"}})
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                req = {}
            if isinstance(req, dict) and req.get("stream") is True:
                return self._stream(path, cfg)
            self._send_json(200, self._answer_object(path, 0, "ok".ljust(cfg["answer_bytes"], ".")))
        finally:
            self.stub._active_add(-1)

    def _stream(self, path, cfg):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            self.stub._sent_add(len(data))

        try:
            if cfg["error_event"]:
                msg = cfg["error_message"] or f"{self.stub.role} failed mid-stream"
                chunk(b"data: " + json.dumps({"error": {"message": msg}}).encode() + b"\n\n")
            for i in range(cfg["events"]):
                if i and cfg["event_delay_ms"] and self._wait(cfg["event_delay_ms"]):
                    raise BrokenPipeError
                obj = self._answer_object(path, 0, f"tok{i}".ljust(cfg["event_bytes"], "."))
                chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")
            chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.stub._aborted_add(self._entry)
            self.close_connection = True


def _peer_name(conn):
    """The common name of the client certificate a TLS connection presented, or None."""
    cert = conn.getpeercert() if hasattr(conn, "getpeercert") else None
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


class StubWorker:
    """A stub worker on a free loopback port, served from a background thread. With `tls` (an
    `ssl.SSLContext` for a server) it speaks HTTPS; `handshake_errors` lists the handshakes it
    refused."""

    def __init__(self, role="regular", model="stub-model", port=0, tls=None, **config):
        self.role = role
        self.model = model
        self.config = dict(DEFAULTS)
        self.config.update(config)
        self._lock = threading.Lock()
        self._conns = set()
        self._requests = []
        self._active = 0
        self._aborted = 0
        self._sent = 0
        self._held = 0
        self._releases = 0
        self._stopping = threading.Event()
        self.handshake_errors = []
        self._server = _Server(("127.0.0.1", port), self)
        if tls:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True,
                                                  do_handshake_on_connect=False)
        self.port = self._server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    # -- what it saw --

    def _record(self, handler, body):
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        entry = {"method": handler.command, "path": handler.path.split("?", 1)[0],
                 "headers": {k.lower(): v for k, v in handler.headers.items()},
                 "body": body, "json": parsed, "time": time.time(), "aborted": False,
                 "client_cert": _peer_name(handler.connection)}
        with self._lock:
            self._requests.append(entry)
        return entry

    def _active_add(self, n):
        with self._lock:
            self._active += n

    def _sent_add(self, n):
        with self._lock:
            self._sent += n

    def _aborted_add(self, entry):
        with self._lock:
            self._aborted += 1
            entry["aborted"] = True

    def requests(self, method=None):
        """The requests received, oldest first (health checks and model listings excluded)."""
        with self._lock:
            return [r for r in self._requests if method is None or r["method"] == method]

    def clear(self):
        with self._lock:
            self._requests.clear()
            self._aborted = 0
            self._sent = 0

    @property
    def active(self):
        """Data-plane requests being answered now."""
        with self._lock:
            return self._active

    @property
    def aborted(self):
        """Data-plane requests whose connection the gateway closed before the answer ended."""
        with self._lock:
            return self._aborted

    @property
    def held(self):
        """Data-plane requests waiting for a release() now (with `hold`)."""
        with self._lock:
            return self._held

    @property
    def sent_bytes(self):
        """Bytes of streamed events written to the gateway so far (a write blocks while the
        gateway does not read)."""
        with self._lock:
            return self._sent

    # -- behaviour --

    def release(self, n=1):
        """Lets `n` held requests (or the next `n` to arrive) answer."""
        with self._lock:
            self._releases += n

    def configure(self, **knobs):
        unknown = set(knobs) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown stub knobs {unknown}")
        self.config.update(knobs)

    def stop(self):
        """Stops listening and closes every connection: to the gateway, the worker is down."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8100)
    ap.add_argument("--role", default="regular")
    ap.add_argument("--model", default="stub-model")
    args = ap.parse_args()
    stub = StubWorker(role=args.role, model=args.model, port=args.port)
    print(f"stub {args.role} worker on {stub.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
