"""The foundation, end to end: real troupe and troupe-sim processes on loopback.

Every data-plane endpoint non-streaming and streaming (what the client got and what the
simulator received), information endpoints, policies, workers added and removed at run time,
bad inputs, client disconnects and workers dying mid-stream.
"""

import json
import os
import socket
import subprocess
import threading
import time
import unittest

from harness import (TROUPE_BIN, Gateway, ProcessTestCase, Sim, Stream, delete, free_port, get,
                     post, request, sse_data, sse_name, wait_until)

MODEL = "sim-model"

# (path, body) of every POST data-plane endpoint.
ENDPOINTS = [
    ("/generate", {"text": "Hello there", "sampling_params": {"max_new_tokens": 4}}),
    ("/v1/chat/completions", {"model": MODEL, "max_tokens": 4,
                              "messages": [{"role": "user", "content": "Hello there"}]}),
    ("/v1/completions", {"model": MODEL, "prompt": "Hello there", "max_tokens": 4}),
    ("/v1/embeddings", {"model": MODEL, "input": "Hello there"}),
    ("/v1/rerank", {"model": MODEL, "query": "hello", "documents": ["a", "hello b"]}),
    ("/rerank", {"model": MODEL, "query": "hello", "documents": ["a", "hello b"]}),
    ("/v1/messages", {"model": MODEL, "max_tokens": 4,
                      "messages": [{"role": "user", "content": "Hello there"}]}),
    ("/v1/responses", {"model": MODEL, "input": "Hello there", "max_output_tokens": 4}),
]

STREAMING = ["/generate", "/v1/chat/completions", "/v1/completions", "/v1/messages",
             "/v1/responses"]


def data_plane_requests(sim):
    return [r for r in sim.requests() if r["method"] == "POST"]


class DataPlaneTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.worker = self.sim()
        self.gw = self.gateway(workers=[self.worker])

    def test_every_endpoint_non_streaming_reaches_the_worker_unchanged(self):
        for path, body in ENDPOINTS:
            with self.subTest(path=path):
                self.worker.clear()
                raw = json.dumps(body)
                r = post(self.gw.url + path, raw, headers={"Content-Type": "application/json",
                                                          "X-Request-Id": "rid-" + path})
                self.assertEqual(r.status, 200, r)
                self.assertIn("application/json", r.headers["content-type"])
                self.assertEqual(r.headers["x-request-id"], "rid-" + path)
                r.json()  # a JSON body
                seen = data_plane_requests(self.worker)
                self.assertEqual(len(seen), 1)
                self.assertEqual(seen[0]["path"], path)
                self.assertEqual(seen[0]["body"], raw)  # byte for byte
                self.assertEqual(seen[0]["headers"]["x-request-id"], "rid-" + path)

    def test_every_streaming_endpoint_relays_events(self):
        for path in STREAMING:
            body = dict(dict(ENDPOINTS)[path], stream=True)
            with self.subTest(path=path):
                s = Stream(self.gw.url + path, body)
                self.assertEqual(s.status, 200)
                self.assertIn("text/event-stream", s.headers["content-type"])
                events = list(s.events())
                s.close()
                self.assertGreater(len(events), 2)
                if path == "/v1/messages":
                    names = [sse_name(e) for e in events]
                    self.assertEqual(names[0], "message_start")
                    self.assertEqual(names[-1], "message_stop")
                    self.assertIn("content_block_delta", names)
                elif path == "/v1/responses":
                    names = [sse_name(e) for e in events]
                    self.assertEqual(names[0], "response.created")
                    self.assertIn("response.output_text.delta", names)
                    self.assertEqual(names[-1], "response.completed")
                else:
                    self.assertEqual(sse_data(events[-1]), "[DONE]")
                    for e in events[:-1]:
                        json.loads(sse_data(e))

    def test_stream_events_arrive_as_the_worker_produces_them(self):
        self.worker.configure(itl_ms=150, output_tokens=6)
        body = dict(dict(ENDPOINTS)["/v1/chat/completions"], stream=True, max_tokens=6)
        s = Stream(self.gw.url + "/v1/chat/completions", body)
        arrivals = []
        for _ in s.events():
            arrivals.append(time.monotonic())
        s.close()
        # Six tokens 150 ms apart: relayed one by one, not buffered to the end.
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        self.assertGreaterEqual(sum(1 for g in gaps if g > 0.08), 3, gaps)

    def test_information_endpoints(self):
        models = get(self.gw.url + "/v1/models").json()
        self.assertEqual(models["object"], "list")
        self.assertEqual([m["id"] for m in models["data"]], [MODEL])
        self.assertEqual(get(self.gw.url + f"/v1/models/{MODEL}").json()["id"], MODEL)
        self.assertEqual(get(self.gw.url + "/v1/models/nope").status, 404)
        self.assertEqual(get(self.gw.url + "/get_model_info").status, 200)
        self.assertEqual(get(self.gw.url + "/get_server_info").status, 200)
        self.assertEqual(get(self.gw.url + "/health_generate").status, 200)
        for probe in ("/health", "/liveness", "/readiness"):
            self.assertEqual(get(self.gw.url + probe).status, 200, probe)
        paths = [r["path"] for r in self.worker.requests()]
        self.assertIn("/get_model_info", paths)
        self.assertIn("/health_generate", paths)

    def test_stored_responses_are_served_by_the_engine(self):
        created = post(self.gw.url + "/v1/responses", {"model": MODEL, "input": "hi"}).json()
        rid = created["id"]
        got = get(self.gw.url + f"/v1/responses/{rid}")
        self.assertEqual(got.status, 200)
        self.assertEqual(got.json()["id"], rid)
        items = get(self.gw.url + f"/v1/responses/{rid}/input_items")
        self.assertEqual(items.status, 200)
        self.assertEqual(items.json()["object"], "list")
        self.assertEqual(post(self.gw.url + f"/v1/responses/{rid}/cancel").status in (200, 400), True)
        self.assertEqual(delete(self.gw.url + f"/v1/responses/{rid}").status, 200)
        self.assertEqual(get(self.gw.url + f"/v1/responses/{rid}").status, 404)

    def test_a_generated_request_id_is_sent_to_the_worker_and_echoed(self):
        self.worker.clear()
        r = post(self.gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        rid = r.headers["x-request-id"]
        self.assertRegex(rid, r"^[0-9a-f]{32}$")
        self.assertEqual(data_plane_requests(self.worker)[0]["headers"]["x-request-id"], rid)

    def test_a_request_id_from_the_default_headers_in_their_order(self):
        body = {"model": MODEL, "prompt": "x", "max_tokens": 1}
        for headers, want in (({"X-Correlation-Id": "corr-1"}, "corr-1"),
                              ({"x-trace-id": "trace-1", "request-id": "req-1"}, "trace-1"),
                              ({"request-id": "req-2", "x-request-id": "xrid-2"}, "xrid-2")):
            with self.subTest(headers=headers):
                self.worker.clear()
                r = post(self.gw.url + "/v1/completions", body, headers=headers)
                self.assertEqual(r.headers["x-request-id"], want)
                seen = data_plane_requests(self.worker)[0]["headers"]
                self.assertEqual(seen["x-request-id"], want)
        # Per-request lines reach the log within the flush interval (services/logs.hpp).
        wait_until(lambda: "request_id=trace-1 " in self.gw.output(), 5, what="the log line")

    def test_request_id_headers_replace_the_defaults(self):
        gw = self.gateway("--request-id-headers", "my-id", "other-id", workers=[self.worker])
        body = {"model": MODEL, "prompt": "x", "max_tokens": 1}
        r = post(gw.url + "/v1/completions", body, headers={"Other-Id": "o-1"})
        self.assertEqual(r.headers["x-request-id"], "o-1")
        r = post(gw.url + "/v1/completions", body, headers={"x-request-id": "ignored"})
        self.assertRegex(r.headers["x-request-id"], r"^[0-9a-f]{32}$")


def heads_then_get(port, head_paths, get_path):
    """Sends HEAD requests for `head_paths` and a GET for `get_path`, pipelined on one keep-alive
    connection; returns the HEADs' (status, lower-cased fields), the GET's status and its body.
    Bytes after a HEAD's head (its content) would be read as the next response's status line,
    and fail."""
    wire = b"".join(f"HEAD {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in head_paths)
    wire += f"GET {get_path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(wire)
        data = b""
        while True:
            heads, pos = [], 0
            while len(heads) <= len(head_paths):
                end = data.find(b"\r\n\r\n", pos)
                if end < 0:
                    break
                lines = data[pos:end].decode("latin-1").split("\r\n")
                version, status = lines[0].split(" ")[:2]
                assert version == "HTTP/1.1", f"not a status line: {lines[0]!r} in {data!r}"
                fields = dict(line.lower().split(": ", 1) for line in lines[1:])
                heads.append((int(status), fields))
                pos = end + 4
            if len(heads) == len(head_paths) + 1:
                length = int(heads[-1][1]["content-length"])
                if len(data) >= pos + length:
                    assert len(data) == pos + length, f"bytes after the GET's answer: {data!r}"
                    return heads[:-1], heads[-1][0], data[pos:pos + length]
            chunk = s.recv(65536)
            assert chunk, f"connection closed after {data!r}"
            data += chunk


class StartupTest(unittest.TestCase):
    def test_a_port_in_use_stops_start_up_with_an_error(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        self.addCleanup(busy.close)
        port = busy.getsockname()[1]
        for flags, what in ((["--port", port, "--prometheus-port", 0], "cannot listen"),
                            (["--port", 0, "--prometheus-port", port], "cannot serve metrics")):
            with self.subTest(what=what):
                p = subprocess.run([TROUPE_BIN, "--host", "127.0.0.1", *map(str, flags)],
                                   capture_output=True, text=True, timeout=10)
                self.assertEqual(p.returncode, 1, p)
                self.assertIn(f"{what} on 127.0.0.1:{port}", p.stdout + p.stderr)
                if what == "cannot serve metrics":  # the way out, for the second node on a host
                    self.assertIn("give each its own --prometheus-port, or 0 for no metrics "
                                  "listener", p.stdout + p.stderr)


class ExposedListenerTest(unittest.TestCase):
    """A listener beyond loopback is authenticated, or start-up refuses it unless told to."""

    def run_troupe(self, *flags, env=None):
        """Starts troupe; returns (exit code or None if it started listening, its output)."""
        args = [TROUPE_BIN, "--port", str(free_port()), *map(str, flags)]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, **(env or {})})
        out = []
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                line = p.stdout.readline()
                if not line:
                    return p.wait(5), "".join(out)
                out.append(line)
                if "troupe listening on" in line:
                    return None, "".join(out)
            self.fail("troupe neither started nor exited:\n" + "".join(out))
        finally:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
            p.stdout.close()

    def test_the_api_beyond_loopback_needs_a_key(self):
        code, out = self.run_troupe("--host", "0.0.0.0", "--prometheus-port", 0)
        self.assertEqual(code, 2, out)
        self.assertIn("the API would listen on 0.0.0.0 without authentication", out)
        for named in ("--api-key", "TROUPE_API_KEY", "--host 127.0.0.1", "--allow-unauthenticated"):
            self.assertIn(named, out)
        code, out = self.run_troupe("--host", "0.0.0.0", "--prometheus-port", 0, "--api-key", "k-1")
        self.assertIsNone(code, out)
        self.assertNotIn("k-1", out)  # the key is never printed
        code, out = self.run_troupe("--host", "0.0.0.0", "--prometheus-port", 0,
                                    env={"TROUPE_API_KEY": "k-2"})
        self.assertIsNone(code, out)

    def test_metrics_beyond_loopback_are_refused(self):
        code, out = self.run_troupe("--prometheus-host", "0.0.0.0", "--prometheus-port", free_port())
        self.assertEqual(code, 2, out)
        self.assertIn("metrics would be served on 0.0.0.0 without authentication", out)
        self.assertIn("--allow-unauthenticated", out)
        # An API key guards the API, not the metrics port.
        code, out = self.run_troupe("--prometheus-host", "0.0.0.0", "--prometheus-port", free_port(),
                                    "--host", "0.0.0.0", "--api-key", "k")
        self.assertEqual(code, 2, out)

    def test_allow_unauthenticated_starts_with_warnings(self):
        code, out = self.run_troupe("--host", "0.0.0.0", "--prometheus-host", "0.0.0.0",
                                    "--prometheus-port", free_port(), "--allow-unauthenticated")
        self.assertIsNone(code, out)
        self.assertIn("the API listens on 0.0.0.0 without --api-key", out)
        self.assertIn("metrics are served on 0.0.0.0 without authentication", out)
        # Loopback needs nothing.
        code, out = self.run_troupe("--host", "127.0.0.1", "--prometheus-port", 0)
        self.assertIsNone(code, out)
        self.assertNotIn("without", out)


class BusyPollTest(ProcessTestCase):
    """--busy-poll-us: io threads poll for work before they sleep; counted in /metrics."""

    CHAT = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}

    def busy_poll_metrics(self, gw):
        return gw.metrics("troupe_io_busy_poll_")

    def serve_some(self, gw):
        for _ in range(20):
            r = post(gw.url + "/v1/chat/completions", json.dumps(self.CHAT),
                     headers={"Content-Type": "application/json"})
            self.assertEqual(r.status, 200, r)

    def io_view(self, gw):
        return gw.get("/admin/actors").json()["io"]

    def test_polling_is_counted_and_requests_are_served(self):
        worker = self.sim()
        gw = self.gateway("--busy-poll-us", "500", workers=[worker])
        self.serve_some(gw)
        m = self.busy_poll_metrics(gw)
        io = self.io_view(gw)
        # Given explicitly, the budget holds whatever the machine (quota, haltpoll).
        self.assertEqual((io["threads"], io["busy_poll_us"]), (1, 500), io)
        # Each time the io thread ran out of work it polled, or (on a machine whose CPUs are
        # all wanted) slept at once and counted the veto. How often it ran out is the
        # machine's timing (a preempted thread finds the next event ready: no gap), so the
        # bound is that it happened and was counted, not once per request.
        polled = m["troupe_io_busy_poll_spins_total"] + m["troupe_io_busy_poll_vetoes_total"]
        self.assertGreaterEqual(polled, 1, m)
        # The admin view, read after /metrics, counts the same (monotonic) totals.
        self.assertGreaterEqual(io["busy_poll"]["spins"] + io["busy_poll"]["vetoes"], polled, io)
        self.assertLessEqual(m["troupe_io_busy_poll_hits_total"],
                             m["troupe_io_busy_poll_spins_total"], m)
        self.assertGreaterEqual(m["troupe_io_busy_poll_seconds_total"], 0, m)
        # The window each thread adapts stays within the cap given.
        self.assertLessEqual(m["troupe_io_busy_poll_window_seconds"], 500e-6, m)
        self.assertLessEqual(io["busy_poll_window_us"], 500, io)
        self.assertGreaterEqual(io["busy_poll_window_us"], 0, io)

    def test_zero_turns_polling_off(self):
        worker = self.sim()
        gw = self.gateway("--busy-poll-us", "0", workers=[worker])
        self.serve_some(gw)
        m = self.busy_poll_metrics(gw)
        self.assertEqual(m["troupe_io_busy_poll_spins_total"], 0, m)
        self.assertEqual(m["troupe_io_busy_poll_vetoes_total"], 0, m)
        io = self.io_view(gw)
        self.assertEqual((io["busy_poll_us"], io["busy_poll_window_us"]), (0, 0), io)
        self.assertEqual(io["busy_poll"], {"spins": 0, "hits": 0, "vetoes": 0,
                                           "window_changes": 0, "seconds": 0}, io)

    def test_a_budget_out_of_range_is_refused(self):
        for value in ("-1", "100001", "soon"):
            with self.subTest(value=value):
                p = subprocess.run([TROUPE_BIN, "--port", "0", "--prometheus-port", "0",
                                    "--busy-poll-us", value],
                                   capture_output=True, text=True, timeout=10)
                self.assertNotEqual(p.returncode, 0, p)
                self.assertIn("--busy-poll-us", p.stdout + p.stderr)


class PolicyTest(ProcessTestCase):
    def fleet(self, policy):
        sims = [self.sim(), self.sim()]
        gw = self.gateway("--policy", policy, workers=sims)
        # Readiness needs one healthy worker; a policy's spread needs both.
        wait_until(lambda: [w["health"] for w in gw.workers()] == ["healthy"] * 2, 10,
                   what="both workers healthy")
        return sims, gw

    def send(self, gw, n):
        for _ in range(n):
            r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
            self.assertEqual(r.status, 200, r)

    def test_round_robin_alternates(self):
        sims, gw = self.fleet("round_robin")
        self.send(gw, 20)
        self.assertEqual([len(data_plane_requests(s)) for s in sims], [10, 10])

    def test_random_uses_every_worker(self):
        sims, gw = self.fleet("random")
        self.send(gw, 40)
        counts = [len(data_plane_requests(s)) for s in sims]
        self.assertEqual(sum(counts), 40)
        self.assertTrue(all(c >= 5 for c in counts), counts)

    def test_power_of_two_avoids_the_loaded_worker(self):
        slow, fast = self.sim(), self.sim()
        slow.configure(stall_ms=4000)
        gw = self.gateway("--policy", "power_of_two", workers=[slow])
        # Park requests on the slow worker (the only one yet) until the gateway sees its load.
        holders = []
        for _ in range(3):
            t = threading.Thread(target=lambda: post(gw.url + "/v1/completions",
                                                     {"model": MODEL, "prompt": "x",
                                                      "max_tokens": 1}, timeout=10))
            t.start()
            holders.append(t)
        wait_until(lambda: gw.loads()[slow.url] == 3, 5, what="load on the slow worker")
        wid = post(gw.url + "/workers", {"url": fast.url}).json()["id"]
        wait_until(lambda: get(gw.url + f"/workers/{wid}").json()["routable"], 10,
                   what="second worker routable")
        self.send(gw, 10)
        self.assertEqual(len(data_plane_requests(fast)), 10)
        self.assertEqual(len(data_plane_requests(slow)), 3)
        for t in holders:
            t.join()
        wait_until(lambda: gw.loads() == {slow.url: 0, fast.url: 0}, 5, what="loads back to 0")


class WorkerManagementTest(ProcessTestCase):
    def test_add_use_and_remove_a_worker_at_run_time(self):
        gw = self.gateway()
        self.assertEqual(get(gw.url + "/readiness").status, 503)
        self.assertEqual(get(gw.url + "/v1/models").status, 503)
        sim = self.sim()
        r = post(gw.url + "/workers", {"url": sim.url})
        self.assertEqual(r.status, 202, r)
        wid = r.json()["id"]
        self.assertEqual(r.headers["location"], f"/workers/{wid}")
        wait_until(lambda: get(gw.url + f"/workers/{wid}").json()["routable"], 10,
                   what="worker routable")
        self.assertEqual(get(gw.url + "/readiness").status, 200)
        w = get(gw.url + f"/workers/{wid}").json()
        self.assertEqual(w["url"], sim.url)
        self.assertEqual(w["models"], [MODEL])
        self.assertEqual(w["worker_type"], "regular")
        ok = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        self.assertEqual(ok.status, 200)

        dup = post(gw.url + "/workers", {"url": sim.url})
        self.assertEqual(dup.status, 409)
        self.assertEqual(dup.json()["error"]["code"], "conflict")

        self.assertEqual(delete(gw.url + f"/workers/{wid}").status, 200)
        self.assertEqual(get(gw.url + f"/workers/{wid}").status, 404)
        self.assertEqual(delete(gw.url + f"/workers/{wid}").status, 404)
        gone = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x"})
        self.assertEqual(gone.status, 404)  # nobody serves the model any more
        self.assertEqual(get(gw.url + "/workers").json()["workers"], [])

    def test_a_worker_up_after_the_gateway_is_routable_in_seconds_and_the_wait_explained(self):
        # The default health interval (60 s) stays: discovery is asked again from 1 s anyway.
        port = free_port()
        gw = self.gateway(workers=[f"http://127.0.0.1:{port}"], wait_ready=False)
        wait_until(lambda: "is not routable: no model known" in gw.output(), 10,
                   what="the warning about the worker")
        self.assertIn(f"(http://127.0.0.1:{port}) is not routable: no model known (GET /v1/models: "
                      "connect_failed", gw.output())
        self.assertEqual(get(gw.url + "/readiness").status, 503)
        self.sim(port=port)
        wait_until(lambda: get(gw.url + "/readiness").status == 200, 45,
                   what="the late worker routable before the 60 s health interval")
        ok = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        self.assertEqual(ok.status, 200, ok)

    def test_bad_worker_specs_are_refused(self):
        gw = self.gateway()
        for body, why in [({}, "url"), ({"url": "nope"}, "url"),
                          ({"url": "http://127.0.0.1:1", "worker_type": "boss"}, "worker_type"),
                          ({"url": "http://127.0.0.1:1", "bootstrap_port": 5}, "bootstrap_port"),
                          ({"url": "http://127.0.0.1:1", "colour": "red"}, "colour")]:
            with self.subTest(body=body):
                r = post(gw.url + "/workers", body)
                self.assertEqual(r.status, 400, r)
                self.assertIn(why, r.json()["error"]["message"])
        self.assertEqual(post(gw.url + "/workers", "{not json").status, 400)
        self.assertEqual(get(gw.url + "/workers").json()["workers"], [])


class BadInputTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.worker = self.sim()
        self.gw = self.gateway("--max-payload-size", "4096", "--request-timeout-secs", "2",
                               workers=[self.worker])

    def assert_still_serving(self):
        r = post(self.gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        self.assertEqual(r.status, 200, r)

    def test_malformed_json_is_400_and_no_worker_is_contacted(self):
        self.worker.clear()
        for path in ("/v1/chat/completions", "/generate", "/v1/messages"):
            r = post(self.gw.url + path, "{\"model\": ", headers={"Content-Type": "application/json"})
            self.assertEqual(r.status, 400, r)
            if path == "/v1/messages":
                self.assertEqual(r.json()["type"], "error")
                self.assertEqual(r.json()["error"]["type"], "invalid_request_error")
            else:
                self.assertEqual(r.json()["error"]["type"], "invalid_request_error")
        self.assertEqual(data_plane_requests(self.worker), [])
        self.assert_still_serving()

    def test_body_over_the_limit_is_413(self):
        r = post(self.gw.url + "/v1/chat/completions",
                 {"model": MODEL, "messages": [{"role": "user", "content": "x" * 8000}]})
        self.assertEqual(r.status, 413)
        self.assertEqual(r.json()["error"]["code"], "payload_too_large")
        self.assert_still_serving()

    def test_unknown_model_is_404_in_each_format(self):
        r = post(self.gw.url + "/v1/chat/completions",
                 {"model": "nope", "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], "model_not_found")
        a = post(self.gw.url + "/v1/messages",
                 {"model": "nope", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(a.status, 404)
        self.assertEqual(a.json()["type"], "error")
        self.assertEqual(a.json()["error"]["type"], "not_found_error")
        self.assert_still_serving()

    def test_known_model_without_a_healthy_worker_is_503(self):
        dead = f"http://127.0.0.1:{socket_port_closed()}"
        r = post(self.gw.url + "/workers", {"url": dead, "model_id": "lonely"})
        self.assertEqual(r.status, 202)
        r = post(self.gw.url + "/v1/completions", {"model": "lonely", "prompt": "x"})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["error"]["code"], "no_worker_available")
        self.assert_still_serving()

    def test_unreachable_worker_is_502(self):
        sim2 = self.sim(model="other-model")
        gw = self.gateway(workers=[sim2])
        sim2.kill()
        r = post(gw.url + "/v1/completions", {"model": "other-model", "prompt": "x"})
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["error"]["code"], "bad_gateway")
        self.assertEqual(gw.loads()[sim2.url], 0)

    def test_deadline_is_504(self):
        self.worker.configure(stall_ms=10000)
        t0 = time.monotonic()
        r = post(self.gw.url + "/v1/completions", {"model": MODEL, "prompt": "x"})
        self.assertEqual(r.status, 504, r)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r.json()["error"]["code"], "gateway_timeout")
        self.worker.configure(stall_ms=0)
        wait_until(lambda: self.gw.loads()[self.worker.url] == 0, 5, what="load back to zero")
        self.assert_still_serving()

    def test_unknown_path_is_404_and_wrong_method_405(self):
        r = get(self.gw.url + "/v2/nothing")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        m = get(self.gw.url + "/v1/chat/completions")
        self.assertEqual(m.status, 405)
        self.assertEqual(m.headers["allow"], "POST")
        self.assert_still_serving()


    def test_a_head_is_answered_with_its_head_alone_and_the_connection_goes_on(self):
        # HEAD on a GET route is that GET without its content (RFC 9110 9.3.2; smg's routes do
        # the same): the status and Content-Length the GET gets. On a POST route 405 with
        # `Allow: POST`, on an unknown path 404, each without content.
        models = get(self.gw.url + "/v1/models")
        self.assertEqual(models.status, 200)
        heads, status, body = heads_then_get(
            self.gw.port, ["/health", "/v1/models", "/v1/chat/completions", "/v2/nothing"],
            "/v1/models")
        self.assertEqual([h[0] for h in heads], [200, 200, 405, 404])
        self.assertEqual(int(heads[1][1]["content-length"]), len(models.body))
        self.assertEqual(heads[1][1]["content-type"], "application/json")
        self.assertEqual(heads[2][1]["allow"], "post")  # (the helper lower-cases)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), models.json())
        # A proxied GET route: the worker is asked with a GET, the client gets the head alone.
        info = get(self.gw.url + "/get_server_info")
        self.assertEqual(info.status, 200)
        self.worker.clear()
        heads, status, body = heads_then_get(self.gw.port, ["/get_server_info"], "/health")
        self.assertEqual(heads[0][0], 200)
        self.assertEqual(int(heads[0][1]["content-length"]), len(info.body))
        self.assertEqual(status, 200)
        asked = [(r["method"], r["path"]) for r in self.worker.requests()
                 if r["path"] == "/get_server_info"]
        self.assertEqual(asked, [("GET", "/get_server_info")])
        # A GET route's 405 names HEAD among the methods it allows.
        self.assertEqual(post(self.gw.url + "/v1/models", {}).headers["allow"], "GET, HEAD")
        # HEAD on the metrics port: 200 with the scrape's length, without the scrape.
        heads, status, body = heads_then_get(self.gw.metrics_port, ["/metrics"], "/metrics")
        self.assertEqual([h[0] for h in heads], [200])
        self.assertEqual(status, 200)
        self.assertIn(b"troupe_", body)
        self.assert_still_serving()


class ApiKeyTest(ProcessTestCase):
    def test_api_key_guards_the_data_plane_and_management_not_the_probes(self):
        sim = self.sim()
        gw = self.gateway(workers=[sim], api_key="sekret")
        body = {"model": MODEL, "prompt": "x", "max_tokens": 1}
        self.assertEqual(post(gw.url + "/v1/completions", body).status, 401)
        self.assertEqual(post(gw.url + "/v1/completions", body,
                              headers={"Authorization": "Bearer wrong"}).status, 401)
        self.assertEqual(post(gw.url + "/v1/completions", body, headers=gw.auth()).status, 200)
        self.assertEqual(get(gw.url + "/workers").status, 401)
        self.assertEqual(get(gw.url + "/workers", headers=gw.auth()).status, 200)
        anth = post(gw.url + "/v1/messages", {"model": MODEL, "max_tokens": 1,
                                               "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(anth.status, 401)
        self.assertEqual(anth.json()["error"]["type"], "authentication_error")
        for probe in ("/health", "/liveness", "/readiness"):
            self.assertEqual(get(gw.url + probe).status, 200)


class StreamFailureTest(ProcessTestCase):
    def test_client_disconnect_mid_stream_releases_the_worker(self):
        sim = self.sim()
        sim.configure(itl_ms=200, output_tokens=100)
        gw = self.gateway(workers=[sim])
        body = {"model": MODEL, "stream": True, "max_tokens": 100,
                "messages": [{"role": "user", "content": "tell me a long story"}]}
        s = Stream(gw.url + "/v1/chat/completions", body)
        events = s.events()
        next(events)
        next(events)
        self.assertEqual(gw.loads()[sim.url], 1)
        s.resp.close()
        s.close()
        wait_until(lambda: gw.loads()[sim.url] == 0, 5, what="gateway load back to zero")
        wait_until(lambda: sim.stats()["active"] == 0, 5, what="worker saw the upstream close")
        r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        self.assertEqual(r.status, 200)

    def test_worker_killed_mid_stream_ends_with_an_error_event_and_the_next_request_works(self):
        slow = self.sim()
        healthy = self.sim()
        slow.configure(itl_ms=200, output_tokens=100)
        gw = self.gateway(workers=[slow, healthy])
        body = {"model": MODEL, "stream": True, "max_tokens": 100,
                "messages": [{"role": "user", "content": "tell me a long story"}]}
        # Round robin: the first request goes to the first worker (the slow one).
        s = Stream(gw.url + "/v1/chat/completions", body)
        events = s.events()
        next(events)
        slow.kill()
        rest = list(events)
        s.close()
        self.assertTrue(rest, "the stream must end with an error event")
        err = json.loads(sse_data(rest[-1]))
        self.assertEqual(err["error"]["code"], "bad_gateway")
        wait_until(lambda: gw.loads()[slow.url] == 0, 5, what="load released")
        for _ in range(4):  # whichever worker the policy picks, the request succeeds
            r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
            self.assertEqual(r.status, 200, r)

    def test_worker_dropping_the_connection_mid_stream(self):
        sim = self.sim()
        sim.configure(drop_after_events=2, itl_ms=10)
        gw = self.gateway(workers=[sim])
        body = {"model": MODEL, "stream": True, "max_tokens": 20,
                "messages": [{"role": "user", "content": "hi"}]}
        s = Stream(gw.url + "/v1/chat/completions", body)
        events = list(s.events())
        s.close()
        self.assertEqual(len(events), 3, events)
        self.assertEqual(json.loads(sse_data(events[-1]))["error"]["code"], "bad_gateway")
        self.assertEqual(gw.loads()[sim.url], 0)


def socket_port_closed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    unittest.main()
