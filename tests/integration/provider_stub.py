"""A recording stub of an upstream API (an external provider or a self-hosted worker) for the API
integration tests: it records every request with its exact headers, lists its models on
`/v1/models` (optionally only for the right key), and answers every other request with a canned
response that tests set: any status, headers and body, or an SSE stream paced event by event.
It can serve HTTPS with a given certificate. Python standard library only.
"""

import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, stub):
        self.stub = stub
        super().__init__(addr, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        pass

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status, body, headers=None):
        self.send_response(status)
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self):
        stub = self.server.stub
        body = self._body()
        stub._record(self, body)
        path = self.path.split("?", 1)[0]
        if path == "/health":
            return self._send(200, b"{}")
        if path == "/v1/models" and self.command == "GET":
            key = self.headers.get("x-api-key") or \
                (self.headers.get("authorization") or "").removeprefix("Bearer ")
            if stub.require_key and key != stub.require_key:
                return self._send(401, b'{"error":{"message":"bad key"}}')
            data = [{"id": m, "object": "model", "type": "model"} for m in stub.models]
            return self._send(200, json.dumps({"object": "list", "data": data}).encode())
        a = stub.answer
        if a.get("events") is not None:
            return self._stream(a)
        self._send(a["status"], a["body"], a.get("headers"))

    def _stream(self, a):
        self.send_response(a["status"])
        self.send_header("Content-Type", a.get("content_type", "text/event-stream"))
        for k, v in (a.get("headers") or {}).items():
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for ev in a["events"]:
            if a.get("event_delay"):
                time.sleep(a["event_delay"])
            data = ev.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if a.get("break_stream"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_DELETE = _handle


class ProviderStub:
    """A stub upstream on a free loopback port (HTTPS when `certfile` is given)."""

    def __init__(self, models=("stub-model",), require_key=None, certfile=None, keyfile=None):
        self.models = list(models)
        self.require_key = require_key
        self._lock = threading.Lock()
        self._requests = []
        self.answer = {}
        self.reply()
        self._server = _Server(("127.0.0.1", 0), self)
        self.sni = []
        if certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certfile, keyfile)
            ctx.sni_callback = lambda sock, name, _ctx: self.sni.append(name)
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        scheme = "https" if certfile else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reply(self, status=200, body=None, headers=None, events=None, event_delay=0,
              break_stream=False):
        """What data-plane requests get from now on: a body (bytes, str or JSON-able), or SSE
        `events` (raw strings, each with its blank line) sent `event_delay` s apart."""
        if body is None:
            body = {"id": "x", "object": "chat.completion", "choices": []}
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.answer = {"status": status, "body": body, "headers": headers, "events": events,
                       "event_delay": event_delay, "break_stream": break_stream}

    def _record(self, handler, body):
        entry = {"method": handler.command, "path": handler.path,
                 "headers": {k.lower(): v for k, v in handler.headers.items()}, "body": body}
        with self._lock:
            self._requests.append(entry)

    def requests(self, data_plane=True):
        """Requests received, oldest first; by default without health checks and model lists."""
        with self._lock:
            reqs = list(self._requests)
        if data_plane:
            reqs = [r for r in reqs if r["path"].split("?")[0] not in ("/health", "/v1/models")]
        return reqs

    def all_headers(self):
        """Every header value this stub ever received, from any request."""
        with self._lock:
            return [v for r in self._requests for v in r["headers"].values()]

    def clear(self):
        with self._lock:
            self._requests.clear()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
