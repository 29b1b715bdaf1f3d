"""Prefill/decode disaggregation: dual dispatch, bootstrap injection, the join and its failures.

(a) Recording stub workers (stub_worker.py) registered as prefill and decode: what each leg
    receives, on the six PD endpoints.
(b) troupe-sim in prefill and decode roles: whole requests end to end, the rendezvous met.
(c) Failures: a worker down, a leg that stalls, a leg that answers 500, a client that leaves
    mid-stream. Each is answered within the request deadline, loads return to 0, the next
    request works.
"""

import json
import socket
import threading
import time
import unittest

import harness
from harness import Gateway, ProcessTestCase, Stream, get, post, sse_data, wait_until
from stub_worker import StubWorker

MODEL = "stub-model"
SIM_MODEL = "sim-model"
BOOTSTRAP_PORT = 8998
TIMEOUT_SECS = 2  # --request-timeout-secs of the failure tests
BOOTSTRAP_KEYS = ("bootstrap_host", "bootstrap_port", "bootstrap_room")


def bodies(model):
    """One ordinary request per PD endpoint."""
    msgs = [{"role": "user", "content": "hello there"}]
    return {
        "/generate": {"text": "hello there", "sampling_params": {"max_new_tokens": 4}},
        "/v1/chat/completions": {"model": model, "messages": msgs, "max_tokens": 4},
        "/v1/completions": {"model": model, "prompt": "hello there", "max_tokens": 4},
        "/v1/rerank": {"model": model, "query": "hello", "documents": ["hello there", "bye"]},
        "/v1/messages": {"model": model, "max_tokens": 4, "messages": msgs},
        "/v1/responses": {"model": model, "input": "hello there", "max_output_tokens": 4},
    }


def pd_flags(prefills, decodes, *extra):
    """Flags registering `prefills` ([(url, port or None)]) and `decodes` ([url])."""
    flags = ["--pd-disaggregation"]
    for url, port in prefills:
        flags += ["--prefill", url] + ([str(port)] if port else ["none"])
    for url in decodes:
        flags += ["--decode", url]
    return flags + [str(x) for x in extra]


def wait_routable(gw, model):
    def listed():
        r = get(gw.url + "/v1/models")
        return r.status == 200 and any(m["id"] == model for m in r.json()["data"])
    wait_until(listed, 10, what=f"{model} routable")


def without_bootstrap(obj):
    return {k: v for k, v in obj.items() if k not in BOOTSTRAP_KEYS}


def request_line(gw, request_id):
    """The gateway's closing log line of a request (the request actor ended), or None."""
    for line in gw.output().splitlines():
        if f"request_id={request_id} " in line and " status=" in line and "duration_ms=" in line:
            return line
    return None


class StubPair:
    """A prefill and a decode stub behind one gateway, shared by the tests of a class."""

    @classmethod
    def start_pair(cls, *extra, prefill_port=BOOTSTRAP_PORT):
        cls.prefill = StubWorker(role="prefill", model=MODEL)
        cls.decode = StubWorker(role="decode", model=MODEL)
        cls.gw = Gateway(*pd_flags([(cls.prefill.url, prefill_port)], [cls.decode.url], *extra))
        try:
            wait_routable(cls.gw, MODEL)
            cls.resting_actors = cls.gw.running_actors()
        except Exception:
            cls.stop_pair()
            raise

    @classmethod
    def stop_pair(cls):
        cls.gw.stop()
        cls.prefill.stop()
        cls.decode.stop()

    def reset(self):
        # A leg the test before cancelled may still be ending at its stub (the gateway answered
        # its client first): let the stubs go idle, so that what they count is this test's.
        wait_until(lambda: self.prefill.active == 0 and self.decode.active == 0, 5,
                   what="the stubs idle")
        time.sleep(0.05)
        for s in (self.prefill, self.decode):
            s.clear()
            s.configure(status=200, stall_ms=0, drop=False, events=3, event_delay_ms=0,
                        meta_info=None, error_message=None, error_event=False, hold=False)

    def legs(self, path):
        """The one request each leg got at `path`."""
        p = [r for r in self.prefill.requests("POST") if r["path"] == path]
        d = [r for r in self.decode.requests("POST") if r["path"] == path]
        self.assertEqual(len(p), 1, f"prefill got {len(p)} requests at {path}")
        self.assertEqual(len(d), 1, f"decode got {len(d)} requests at {path}")
        return p[0], d[0]

    def assert_loads_zero(self):
        """Both workers' loads are back to 0 and no actor was left behind: the request actor
        and its two legs are gone, the actor system is back at rest."""
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 5,
                   what="loads back to 0")
        wait_until(lambda: self.gw.running_actors() == self.resting_actors, 5,
                   what=f"running actors back to {self.resting_actors}")

    def assert_works(self):
        r = post(self.gw.url + "/generate", {"text": "again"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["role"], "decode")

    def tearDown(self):
        if any(err for _, err in getattr(self._outcome, "errors", []) if err):
            print(f"\n--- gateway log:\n{self.gw.output()[-4000:]}")


# -- (a) what the legs receive --------------------------------------------------------------


class PdDispatchTest(StubPair, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_pair("--request-timeout-secs", 10)

    @classmethod
    def tearDownClass(cls):
        cls.stop_pair()

    def setUp(self):
        self.reset()

    def test_both_legs_get_the_same_body_at_the_same_path(self):
        rooms = set()
        for path, body in bodies(MODEL).items():
            with self.subTest(path=path):
                r = post(self.gw.url + path, body)
                self.assertEqual(r.status, 200, r)
                # The client gets the decode leg's answer.
                self.assertEqual(r.json()["role"], "decode")
                self.assertEqual(r.json()["path"], path)
                p, d = self.legs(path)
                self.assertEqual(p["body"], d["body"], "the legs got different bodies")
                sent = p["json"]
                self.assertEqual(sent["bootstrap_host"], "127.0.0.1")
                self.assertEqual(sent["bootstrap_port"], BOOTSTRAP_PORT)
                room = sent["bootstrap_room"]
                self.assertIsInstance(room, int)
                self.assertTrue(0 <= room < 2**63)
                rooms.add(room)
                # Nothing else changed: same fields, same values, same order.
                self.assertEqual(list(without_bootstrap(sent).items()), list(body.items()))
                self.assertEqual(p["headers"]["x-request-id"], r.headers["x-request-id"])
                self.assertEqual(d["headers"]["x-request-id"], r.headers["x-request-id"])
        self.assertEqual(len(rooms), 6, "every request gets a fresh room")

    def test_unset_fields_are_not_invented(self):
        r = post(self.gw.url + "/generate", {"text": "x"})
        self.assertEqual(r.status, 200, r)
        p, d = self.legs("/generate")
        for leg in (p, d):
            self.assertEqual(list(leg["json"].keys()), ["text", *BOOTSTRAP_KEYS])
            self.assertNotIn(b"null", leg["body"])

    def test_batches_get_arrays_with_distinct_rooms(self):
        cases = [
            ("/generate", {"text": ["a", "b", "c"]}, 3),
            ("/generate", {"input_ids": [[1, 2], [3, 4]], "sampling_params": {}}, 2),
            ("/v1/chat/completions",
             {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "n": 3}, 3),
            ("/v1/completions", {"model": MODEL, "prompt": ["a", "b", "c", "d"]}, 4),
            ("/v1/completions", {"model": MODEL, "prompt": [[1, 2], [3]]}, 2),
        ]
        for path, body, n in cases:
            with self.subTest(path=path, body=body):
                self.reset()
                r = post(self.gw.url + path, body)
                self.assertEqual(r.status, 200, r)
                p, d = self.legs(path)
                self.assertEqual(p["body"], d["body"])
                sent = p["json"]
                self.assertEqual(sent["bootstrap_host"], ["127.0.0.1"] * n)
                self.assertEqual(sent["bootstrap_port"], [BOOTSTRAP_PORT] * n)
                self.assertEqual(len(sent["bootstrap_room"]), n)
                self.assertEqual(len(set(sent["bootstrap_room"])), n)
                self.assertEqual(without_bootstrap(sent), body)

    def test_single_prompts_in_list_form_stay_scalar(self):
        cases = [
            ("/generate", {"input_ids": [1, 2, 3]}),
            ("/v1/completions", {"model": MODEL, "prompt": [1, 2, 3]}),
            ("/v1/chat/completions",
             {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "n": 1}),
        ]
        for path, body in cases:
            with self.subTest(path=path):
                self.reset()
                self.assertEqual(post(self.gw.url + path, body).status, 200)
                p, _ = self.legs(path)
                self.assertIsInstance(p["json"]["bootstrap_room"], int)
                self.assertEqual(p["json"]["bootstrap_host"], "127.0.0.1")

    def test_streams_relay_the_decode_leg_event_by_event(self):
        self.decode.configure(events=4)
        for path, body in bodies(MODEL).items():
            with self.subTest(path=path):
                self.reset()
                self.decode.configure(events=4)
                s = Stream(self.gw.url + path, dict(body, stream=True))
                events = list(s.events())
                s.close()
                self.assertEqual(s.status, 200)
                self.assertTrue(s.headers["content-type"].startswith("text/event-stream"))
                self.assertEqual(len(events), 5)
                self.assertEqual([json.loads(sse_data(e))["text"] for e in events[:4]],
                                 ["tok0", "tok1", "tok2", "tok3"])
                self.assertEqual(sse_data(events[-1]), "[DONE]")
                p, d = self.legs(path)
                self.assertEqual(p["body"], d["body"])
                self.assertIs(p["json"]["stream"], True)

    def test_input_logprobs_of_the_prefill_are_prepended(self):
        pre = [[-0.25, 11, None], [-0.5, 12, None]]
        self.prefill.configure(meta_info={"input_token_logprobs": pre})
        self.decode.configure(meta_info={"input_token_logprobs": [[-1.5, 13, None]],
                                         "output_token_logprobs": [[-2.0, 99, None]]})
        body = {"text": "x", "return_logprob": True}
        r = post(self.gw.url + "/generate", body)
        self.assertEqual(r.status, 200, r)
        meta = r.json()["meta_info"]
        self.assertEqual(meta["input_token_logprobs"], pre + [[-1.5, 13, None]])
        self.assertEqual(meta["output_token_logprobs"], [[-2.0, 99, None]])
        # Streamed: every chunk carries the merged list, the prefill's streamed answer is read.
        s = Stream(self.gw.url + "/generate", dict(body, stream=True))
        events = [e for e in s.events() if sse_data(e) != "[DONE]"]
        s.close()
        self.assertEqual(len(events), 3)
        for e in events:
            self.assertEqual(json.loads(sse_data(e))["meta_info"]["input_token_logprobs"],
                             pre + [[-1.5, 13, None]])
        # Without return_logprob the decode answer is untouched.
        r = post(self.gw.url + "/generate", {"text": "x"})
        self.assertEqual(r.json()["meta_info"]["input_token_logprobs"], [[-1.5, 13, None]])

    def test_info_routes_in_a_pd_only_fleet(self):
        for path in ("/get_model_info", "/get_server_info"):
            r = get(self.gw.url + path)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["role"], "prefill", "served by a prefill worker")
        r = get(self.gw.url + "/health_generate")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len([q for q in self.prefill.requests("GET")
                              if q["path"] == "/health_generate"]), 1)
        self.assertEqual(len([q for q in self.decode.requests("GET")
                              if q["path"] == "/health_generate"]), 1)
        # One half of the pair failing fails the check.
        self.prefill.configure(status=500)
        self.assertGreaterEqual(get(self.gw.url + "/health_generate").status, 500)
        self.assert_loads_zero()


# -- (c) failures -----------------------------------------------------------------------------


class PdFailureTest(StubPair, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_pair("--request-timeout-secs", TIMEOUT_SECS, "--retry-max-retries", 0)

    @classmethod
    def tearDownClass(cls):
        cls.stop_pair()

    def setUp(self):
        self.reset()

    def timed_post(self, path, body):
        t = time.time()
        r = post(self.gw.url + path, body, timeout=TIMEOUT_SECS + 5)
        return r, time.time() - t

    def test_a_leg_answering_500_fails_the_pair_at_once(self):
        for leg in ("prefill", "decode"):
            with self.subTest(leg=leg):
                self.reset()
                failing = self.prefill if leg == "prefill" else self.decode
                other = self.decode if leg == "prefill" else self.prefill
                failing.configure(status=500, error_message=f"{leg} exploded")
                other.configure(stall_ms=5000)  # would wait for its partner
                r, took = self.timed_post("/v1/chat/completions", bodies(MODEL)["/v1/chat/completions"])
                self.assertGreaterEqual(r.status, 500, r)
                self.assertLess(took, 1.0, "the other leg is cancelled, not awaited")
                err = r.json()["error"]
                self.assertIn(f"{leg} exploded", err["message"])
                wait_until(lambda: other.aborted == 1, 3, what="the other leg cancelled")
                self.assert_loads_zero()
                self.reset()
                self.assert_works()

    def test_errors_come_in_the_api_format(self):
        self.prefill.configure(status=500)
        r = post(self.gw.url + "/v1/messages", bodies(MODEL)["/v1/messages"])
        self.assertGreaterEqual(r.status, 500)
        self.assertEqual(r.json()["type"], "error")
        self.assertIn("message", r.json()["error"])
        self.reset()
        self.decode.configure(status=500)
        s = Stream(self.gw.url + "/v1/messages", dict(bodies(MODEL)["/v1/messages"], stream=True))
        self.assertEqual(s.status, 500)
        s.close()

    def test_a_client_error_of_the_decode_worker_keeps_its_status(self):
        self.decode.configure(status=400, error_message="max_tokens too large")
        r = post(self.gw.url + "/v1/completions", bodies(MODEL)["/v1/completions"])
        self.assertEqual(r.status, 400, r)
        self.assertIn("max_tokens too large", r.json()["error"]["message"])

    def test_the_decode_error_wins(self):
        # Both legs fail; the decode worker's answer is the one the client gets, in its status.
        # The decode stub holds its 503 until the prefill stub has the request (had the decode
        # answered before the prefill leg was even sent, there would be nothing to cancel), and
        # the prefill answers much later: had it failed first, the decode leg would have been
        # cancelled at once and had no error of its own. The request is followed by its id: a
        # leg of the test before may still be ending at a stub.
        self.prefill.configure(status=500, error_message="prefill says no", stall_ms=3000)
        self.decode.configure(status=503, error_message="decode says no", hold=True)
        rid = "decode-error-wins-" + str(time.time_ns())

        def ours(stub):
            return [r for r in stub.requests("POST") if r["headers"].get("x-request-id") == rid]
        result = {}

        def send():
            t0 = time.time()
            result["r"] = post(self.gw.url + "/generate", {"text": "x"},
                               headers={"x-request-id": rid}, timeout=TIMEOUT_SECS + 5)
            result["took"] = time.time() - t0
        t = threading.Thread(target=send)
        t.start()
        try:
            wait_until(lambda: ours(self.prefill) and ours(self.decode) and self.decode.held == 1,
                       3, what="both legs at their workers")
            self.decode.release()
        finally:
            t.join(TIMEOUT_SECS + 6)
        r = result["r"]
        self.assertEqual(r.status, 503, r)
        self.assertIn("decode says no", r.json()["error"]["message"])
        self.assertLess(result["took"], 2.0, "the prefill leg is cancelled, not awaited")
        wait_until(lambda: ours(self.prefill)[0]["aborted"], 3, what="the prefill leg cancelled")
        self.assert_loads_zero()

    def test_a_stalled_leg_times_out_within_the_deadline(self):
        for leg in ("prefill", "decode"):
            with self.subTest(leg=leg):
                self.reset()
                stalled = self.prefill if leg == "prefill" else self.decode
                stalled.configure(stall_ms=30000)
                r, took = self.timed_post("/v1/completions", bodies(MODEL)["/v1/completions"])
                self.assertEqual(r.status, 504, r)
                self.assertLess(took, TIMEOUT_SECS + 1.0)
                self.assertIn(leg, r.json()["error"]["message"])
                wait_until(lambda: stalled.aborted == 1, 3, what="the stalled leg closed")
                self.assert_loads_zero()
                self.reset()
                self.assert_works()

    def test_a_stalled_stream_times_out_within_the_deadline(self):
        self.prefill.configure(stall_ms=30000)
        t = time.time()
        s = Stream(self.gw.url + "/generate", {"text": "x", "stream": True},
                   timeout=TIMEOUT_SECS + 5)
        events = list(s.events()) if s.status == 200 else []
        s.close()
        self.assertLess(time.time() - t, TIMEOUT_SECS + 1.0)
        # Nothing reached the client before the prefill leg succeeded: a clean error status.
        self.assertEqual(s.status, 504)
        self.assertEqual(events, [])
        self.assert_loads_zero()

    def test_a_prefill_error_event_after_a_200_head_fails_the_pair(self):
        self.prefill.configure(error_event=True, error_message="KV sender crashed")
        self.decode.configure(stall_ms=5000)  # would wait for a KV cache that never comes
        t = time.time()
        s = Stream(self.gw.url + "/v1/chat/completions",
                   dict(bodies(MODEL)["/v1/chat/completions"], stream=True))
        body = s.resp.read()
        s.close()
        self.assertLess(time.time() - t, 1.0)
        self.assertEqual(s.status, 502)
        self.assertIn("KV sender crashed", json.loads(body)["error"]["message"])
        wait_until(lambda: self.decode.aborted == 1, 3, what="decode leg cancelled")
        self.assert_loads_zero()

    def test_the_request_is_joining_while_one_leg_waits_for_the_other(self):
        self.prefill.configure(stall_ms=800)
        t = threading.Thread(target=post, args=(self.gw.url + "/generate", {"text": "x"}))
        t.start()
        try:
            def joining():
                reqs = get(self.gw.url + "/admin/requests").json()["requests"]
                return reqs and reqs[0]["phase"] == "joining" and reqs[0]
            entry = wait_until(joining, 3, what="phase joining")
            self.assertEqual(len(entry["workers"]), 2)
        finally:
            t.join()
        self.assert_loads_zero()

    def test_a_dropped_connection_fails_the_pair(self):
        self.decode.configure(drop=True)
        self.prefill.configure(stall_ms=5000)
        r, took = self.timed_post("/generate", {"text": "x"})
        self.assertEqual(r.status, 502, r)
        self.assertLess(took, 1.0)
        self.assert_loads_zero()

    def test_client_leaving_mid_stream_cancels_both_legs(self):
        self.decode.configure(events=100, event_delay_ms=100)
        self.prefill.configure(stall_ms=0)
        s = Stream(self.gw.url + "/v1/chat/completions",
                   dict(bodies(MODEL)["/v1/chat/completions"], stream=True))
        rid = s.headers["x-request-id"]
        it = s.events()
        next(it)
        next(it)
        s.conn.sock.shutdown(socket.SHUT_RDWR)
        s.close()
        wait_until(lambda: self.decode.aborted == 1, 3, what="decode leg cancelled")
        self.assert_loads_zero()
        line = wait_until(lambda: request_line(self.gw, rid), 3, what="request actor ended")
        self.assertIn("status=499", line)
        self.assert_works()

    def test_client_leaving_while_the_legs_wait_cancels_both(self):
        self.prefill.configure(stall_ms=30000)
        self.decode.configure(stall_ms=30000)
        conn = socket.create_connection(("127.0.0.1", self.gw.port))
        body = json.dumps({"text": "x"}).encode()
        conn.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        wait_until(lambda: self.prefill.active == 1 and self.decode.active == 1, 3,
                   what="both legs sent")
        conn.close()
        wait_until(lambda: self.prefill.aborted == 1 and self.decode.aborted == 1, 3,
                   what="both legs cancelled")
        self.assert_loads_zero()


class PdWorkerDownTest(ProcessTestCase):
    """A worker that dies after it was found healthy: its leg fails to connect."""

    def start_fleet(self, *, prefills=1):
        self.prefills = [StubWorker(role="prefill", model=MODEL) for _ in range(prefills)]
        self.decode = StubWorker(role="decode", model=MODEL)
        self.addCleanup(lambda: [s.stop() for s in self.prefills + [self.decode]])
        self.gw = self.gateway(*pd_flags([(p.url, BOOTSTRAP_PORT) for p in self.prefills],
                                         [self.decode.url], "--request-timeout-secs",
                                         TIMEOUT_SECS))
        wait_routable(self.gw, MODEL)
        wait_until(lambda: all(w["routable"] for w in self.gw.workers()), 10,
                   what="all workers healthy")
        self.resting_actors = self.gw.running_actors()

    def assert_settled(self):
        """Loads back to 0, and no request actor or leg left behind."""
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 3, what="loads 0")
        wait_until(lambda: self.gw.running_actors() == self.resting_actors, 3,
                   what=f"running actors back to {self.resting_actors}")

    def test_prefill_down(self):
        self.start_fleet()
        port = self.prefills[0].port
        self.prefills[0].stop()
        self.decode.configure(stall_ms=5000)
        t = time.time()
        r = post(self.gw.url + "/v1/completions", bodies(MODEL)["/v1/completions"])
        self.assertEqual(r.status, 502, r)
        self.assertLess(time.time() - t, 1.0)
        self.assertIn("prefill", r.json()["error"]["message"])
        wait_until(lambda: self.decode.aborted == 1, 3, what="decode leg cancelled")
        self.assert_settled()
        # The worker comes back on its port: the next request works.
        self.prefills[0] = StubWorker(role="prefill", model=MODEL, port=port)
        self.decode.configure(stall_ms=0)
        r = post(self.gw.url + "/v1/completions", bodies(MODEL)["/v1/completions"])
        self.assertEqual(r.status, 200, r)

    def test_decode_down(self):
        self.start_fleet()
        port = self.decode.port
        self.decode.stop()
        self.prefills[0].configure(stall_ms=5000)
        t = time.time()
        r = post(self.gw.url + "/v1/messages", bodies(MODEL)["/v1/messages"])
        self.assertEqual(r.status, 502, r)
        self.assertLess(time.time() - t, 1.0)
        self.assertEqual(r.json()["type"], "error")
        self.assertIn("decode", r.json()["error"]["message"])
        wait_until(lambda: self.prefills[0].aborted == 1, 3, what="prefill leg cancelled")
        self.assert_settled()
        self.decode = StubWorker(role="decode", model=MODEL, port=port)
        self.prefills[0].configure(stall_ms=0)
        r = post(self.gw.url + "/v1/messages", bodies(MODEL)["/v1/messages"])
        self.assertEqual(r.status, 200, r)

    def test_another_pair_serves_when_a_prefill_is_down(self):
        self.start_fleet(prefills=2)
        self.prefills[0].stop()
        for _ in range(4):
            r = post(self.gw.url + "/generate", {"text": "x"})
            self.assertEqual(r.status, 200, r)
        self.assert_settled()

    def test_a_pair_registered_at_run_time(self):
        prefill = StubWorker(role="prefill", model=MODEL)
        decode = StubWorker(role="decode", model=MODEL)
        self.addCleanup(prefill.stop)
        self.addCleanup(decode.stop)
        gw = self.gateway()
        for spec in ({"url": prefill.url, "worker_type": "prefill", "bootstrap_port": 9001},
                     {"url": decode.url, "worker_type": "decode"}):
            r = post(gw.url + "/workers", spec)
            self.assertLess(r.status, 300, r)
        wait_routable(gw, MODEL)
        r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "x"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["role"], "decode")
        sent = prefill.requests("POST")[-1]["json"]
        self.assertEqual(sent["bootstrap_port"], 9001)
        self.assertEqual(decode.requests("POST")[-1]["json"]["bootstrap_room"],
                         sent["bootstrap_room"])

    def test_half_a_pair_is_not_served(self):
        decode = StubWorker(role="decode", model=MODEL)
        self.addCleanup(decode.stop)
        gw = self.gateway(*pd_flags([], [decode.url]), wait_ready=False)
        wait_until(lambda: gw.workers() and gw.workers()[0]["routable"], 10, what="decode healthy")
        # Without a prefill worker the model is not advertised, and requests are refused.
        self.assertEqual(get(gw.url + "/v1/models").status, 503)
        r = post(gw.url + "/generate", {"text": "x"})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(decode.requests("POST"), [])


class PdOnlyModelTest(ProcessTestCase):
    """A model that only prefill/decode workers serve, asked for what a pair cannot serve, or
    served by half a pair: a clear answer in the route's format, never "does not exist"."""

    def test_embeddings_of_a_pd_only_model_are_501_not_unknown(self):
        prefill = StubWorker(role="prefill", model=MODEL)
        decode = StubWorker(role="decode", model=MODEL)
        self.addCleanup(lambda: [s.stop() for s in (prefill, decode)])
        gw = self.gateway(*pd_flags([(prefill.url, BOOTSTRAP_PORT)], [decode.url]))
        wait_routable(gw, MODEL)  # /v1/models lists it
        for body, param, who in (({"model": MODEL, "input": "hello"}, "model",
                                  f"the model '{MODEL}'"),
                                 ({"input": "hello"}, None, "the fleet")):
            r = post(gw.url + "/v1/embeddings", body)
            self.assertEqual(r.status, 501, r)
            err = r.json()["error"]
            self.assertEqual(err["code"], "not_implemented")
            self.assertEqual(err["type"], "invalid_request_error")
            self.assertEqual(err["param"], param)
            self.assertEqual(err["message"],
                             f"{who} is served by prefill/decode workers only, which cannot "
                             "serve POST /v1/embeddings (it needs a regular worker)")
        # Nothing reached a worker, and the pair goes on serving what it can.
        self.assertEqual([r for s in (prefill, decode) for r in s.requests("POST")], [])
        r = post(gw.url + "/v1/chat/completions", bodies(MODEL)["/v1/chat/completions"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["role"], "decode")
        wait_until(lambda: all(v == 0 for v in gw.loads().values()), 3, what="loads 0")

    def test_half_a_pair_says_which_half_is_missing(self):
        # Another model keeps the gateway ready; this one has a decode worker only.
        regular = StubWorker(model="other-model")
        decode = StubWorker(role="decode", model=MODEL)
        self.addCleanup(lambda: [s.stop() for s in (regular, decode)])
        gw = self.gateway(*pd_flags([], [decode.url]), "--worker-urls", regular.url)
        wait_until(lambda: len(gw.workers()) == 2 and all(w["routable"] for w in gw.workers()),
                   10, what="both workers healthy")
        r = post(gw.url + "/v1/chat/completions", bodies(MODEL)["/v1/chat/completions"])
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["error"]["code"], "no_worker_available")
        self.assertEqual(r.json()["error"]["message"],
                         f"the model '{MODEL}' has decode workers but no prefill worker: POST "
                         "/v1/chat/completions needs a prefill and a decode worker (or a regular "
                         "one)")
        r = post(gw.url + "/v1/messages", bodies(MODEL)["/v1/messages"])
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["type"], "error")  # Anthropic's format on its route
        self.assertEqual(r.json()["error"]["type"], "overloaded_error")
        self.assertIn("has decode workers but no prefill worker", r.json()["error"]["message"])
        self.assertEqual(decode.requests("POST"), [])
        # The other model is served meanwhile.
        r = post(gw.url + "/v1/chat/completions", bodies("other-model")["/v1/chat/completions"])
        self.assertEqual(r.status, 200, r)


class PdNoBootstrapPortTest(StubPair, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.start_pair(prefill_port=None)

    @classmethod
    def tearDownClass(cls):
        cls.stop_pair()

    def test_bootstrap_port_is_null(self):
        self.reset()
        r = post(self.gw.url + "/v1/completions", {"model": MODEL, "prompt": ["a", "b"]})
        self.assertEqual(r.status, 200, r)
        p, d = self.legs("/v1/completions")
        self.assertEqual(p["body"], d["body"])
        self.assertEqual(p["json"]["bootstrap_port"], [None, None])
        self.reset()
        post(self.gw.url + "/generate", {"text": "a"})
        p, _ = self.legs("/generate")
        self.assertIn("bootstrap_port", p["json"])
        self.assertIsNone(p["json"]["bootstrap_port"])


# -- (b) end to end with the simulator ---------------------------------------------------------


class PdSimulatorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bootstrap_port = harness.free_port()
        cls.prefill = harness.Sim(role="prefill", bootstrap_port=cls.bootstrap_port)
        cls.decode = harness.Sim(role="decode")
        cls.gw = Gateway(*pd_flags([(cls.prefill.url, cls.bootstrap_port)], [cls.decode.url],
                                   "--request-timeout-secs", 10))
        wait_routable(cls.gw, SIM_MODEL)

    @classmethod
    def tearDownClass(cls):
        for p in (cls.gw, cls.prefill, cls.decode):
            p.stop()

    def met(self):
        return self.decode.stats()["rendezvous"]

    def test_six_endpoints_end_to_end(self):
        for path, body in bodies(SIM_MODEL).items():
            for stream in ((False, True) if path != "/v1/rerank" else (False,)):
                with self.subTest(path=path, stream=stream):
                    before = self.met()
                    if stream:
                        s = Stream(self.gw.url + path, dict(body, stream=True))
                        events = list(s.events())
                        s.close()
                        self.assertEqual(s.status, 200)
                        self.assertGreater(len(events), 1)
                        self.assertNotIn("error", sse_data(events[-1]).split(":")[0])
                    else:
                        r = post(self.gw.url + path, body)
                        self.assertEqual(r.status, 200, r)
                        self.assertIsNone(r.json().get("error"))
                    after = self.met()
                    self.assertEqual(after["timeouts"], before["timeouts"])
                    self.assertEqual(after["rejected"], before["rejected"])
                    if path == "/v1/rerank":
                        # Nothing to decode: the simulator answers without a rendezvous, but
                        # both legs got the request with the same room.
                        rooms = [[q["json"]["bootstrap_room"] for q in sim.requests()
                                  if q["path"] == path][-1] for sim in (self.prefill, self.decode)]
                        self.assertEqual(rooms[0], rooms[1])
                    else:
                        self.assertEqual(after["met"], before["met"] + 1, "the legs met")

    def test_generate_batch_meets_once_per_prompt(self):
        before = self.met()["met"]
        r = post(self.gw.url + "/generate", {"text": ["one", "two two", "three"],
                                             "sampling_params": {"max_new_tokens": 2}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json()), 3)
        self.assertEqual(self.met()["met"], before + 3)

    def test_input_logprobs_come_from_the_prefill(self):
        body = {"text": "four words of prompt", "return_logprob": True,
                "sampling_params": {"max_new_tokens": 3}}
        r = post(self.gw.url + "/generate", body)
        self.assertEqual(r.status, 200, r)
        meta = r.json()["meta_info"]
        self.assertEqual(len(meta["input_token_logprobs"]), meta["prompt_tokens"])
        self.assertEqual(len(meta["output_token_logprobs"]), 3)
        s = Stream(self.gw.url + "/generate", dict(body, stream=True))
        chunks = [json.loads(sse_data(e)) for e in s.events() if sse_data(e) != "[DONE]"]
        s.close()
        self.assertTrue(chunks)
        for c in chunks:
            self.assertEqual(len(c["meta_info"]["input_token_logprobs"]),
                             c["meta_info"]["prompt_tokens"])

    def test_a_stored_response_is_read_back_from_its_decode_worker(self):
        r = post(self.gw.url + "/v1/responses", bodies(SIM_MODEL)["/v1/responses"])
        self.assertEqual(r.status, 200, r)
        rid = r.json()["id"]
        got = get(self.gw.url + f"/v1/responses/{rid}")
        self.assertEqual(got.status, 200, got)
        self.assertEqual(got.json()["id"], rid)
        self.assertEqual(got.json()["output"], r.json()["output"])

    def test_a_failing_prefill_is_not_waited_for(self):
        self.prefill.configure(fail_status=500)
        try:
            t = time.time()
            r = post(self.gw.url + "/v1/chat/completions", bodies(SIM_MODEL)["/v1/chat/completions"])
            self.assertGreaterEqual(r.status, 500, r)
            self.assertLess(time.time() - t, 1.0, "decode is cancelled, not left to time out")
        finally:
            self.prefill.configure(fail_status=0)
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 3, what="loads 0")
        wait_until(lambda: self.decode.stats()["active"] == 0, 3, what="decode idle")
        r = post(self.gw.url + "/v1/chat/completions", bodies(SIM_MODEL)["/v1/chat/completions"])
        self.assertEqual(r.status, 200, r)


if __name__ == "__main__":
    unittest.main()
