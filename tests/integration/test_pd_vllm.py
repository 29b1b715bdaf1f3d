"""vLLM prefill/decode in sequence, with troupe-sim playing vLLM's roles (`--runtime vllm`).

What each leg received, byte for byte: the prefill leg is the client's request made one
unstreamed token and tagged with the KV connector's params; the decode leg is the client's
request with the `kv_transfer_params` the prefill returned (NIXL) or the gateway made
(Mooncake). The simulators check the handoff themselves: the decode reads the blocks the params
name from the prefill's side channel and refuses any it cannot read, so a wrong relay fails.
Failures of either leg are answered within the deadline, in the route's format; loads return to
0 and no actor is left. The runtime comes from --pd-runtime, POST /workers, or what the worker
reports about itself.
"""

import json
import socket
import threading
import time
import unittest

from harness import (ProcessTestCase, Stream, assert_each_refused, free_port, get, model_listed,
                     post, sse_data, wait_until)

MODEL = "sim-model"
TIMEOUT_SECS = 3


def prompt(words=40, tag="kv"):
    return " ".join(f"{tag}{i}" for i in range(words))


def chat(**extra):
    body = {"model": MODEL, "messages": [{"role": "user", "content": prompt()}], "max_tokens": 5}
    body.update(extra)
    return body


def compact(obj):
    """The gateway writes JSON compactly, keys in the client's order."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def ordered(raw):
    """A JSON body with its key order kept."""
    return json.loads(raw, object_pairs_hook=lambda kv: kv)


class VllmPair(ProcessTestCase):
    """A vLLM prefill and decode simulator behind a gateway started with `flags`."""

    sim_flags = ()
    gateway_flags = ("--pd-runtime", "vllm")
    register = "flags"  # or "post": registered with POST /workers after start-up

    def setUp(self):
        super().setUp()
        self.kport = free_port()
        self.prefill = self.sim("--runtime", "vllm", "--kv-engine-id", "engine-p",
                                *self.sim_flags, role="prefill", bootstrap_port=self.kport)
        self.decode = self.sim("--runtime", "vllm", "--bootstrap-timeout-ms", "2000",
                               *self.sim_flags, role="decode")
        pd = ["--pd-disaggregation"]
        if self.register == "flags":
            pd += ["--prefill", self.prefill.url, str(self.kport), "--decode", self.decode.url]
        self.gw = self.gateway(*pd, "--request-timeout-secs", TIMEOUT_SECS, *self.gateway_flags)
        if self.register == "post":
            self.post_workers()
        wait_until(lambda: model_listed(self.gw.url, MODEL), 10, what="the pair routable")
        self.resting = self.gw.running_actors()

    def post_workers(self):
        pass

    def legs(self, path):
        p = [r for r in self.prefill.requests() if r["path"] == path]
        d = [r for r in self.decode.requests() if r["path"] == path]
        return p, d

    def assert_settled(self):
        wait_until(lambda: all(v == 0 for v in self.gw.loads().values()), 5, what="loads 0")
        wait_until(lambda: self.gw.running_actors() == self.resting, 5,
                   what=f"running actors back to {self.resting}")
        wait_until(lambda: self.prefill.stats()["active"] == 0
                   and self.decode.stats()["active"] == 0, 5, what="simulators idle")

    def metric(self, name, **labels):
        """The sum of the samples of `name` whose labels include `labels`."""
        text = get(f"http://127.0.0.1:{self.gw.metrics_port}/metrics").text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line
                                                   for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
        return total


class SequentialDispatchTest(VllmPair):
    def test_each_leg_gets_what_vllm_expects_and_the_kv_cache_moves(self):
        body = chat(temperature=0, stream_options={"include_usage": True}, stream=False)
        r = post(self.gw.url + "/v1/chat/completions", body)
        self.assertEqual(r.status, 200, r)
        p, d = self.legs("/v1/chat/completions")
        self.assertEqual((len(p), len(d)), (1, 1))
        # Prefill: the client's request, one unstreamed token, tagged (NIXL), fields in order.
        want = dict(body, stream=False, max_tokens=1)
        del want["stream_options"]
        want["kv_transfer_params"] = {"do_remote_decode": True, "do_remote_prefill": False}
        self.assertEqual(p[0]["body"], compact(want))
        # Decode: the client's request as sent, plus the params the prefill returned.
        params = ordered(d[0]["body"])[-1]
        self.assertEqual(params[0], "kv_transfer_params")
        decode_body = json.loads(d[0]["body"])
        self.assertEqual(d[0]["body"],
                         compact(dict(body, kv_transfer_params=decode_body["kv_transfer_params"])))
        kv = decode_body["kv_transfer_params"]
        self.assertEqual((kv["do_remote_prefill"], kv["remote_engine_id"], kv["remote_port"]),
                         (True, "engine-p", self.kport))
        self.assertEqual(len(kv["remote_block_ids"]), 2)  # 41 prompt tokens: 2 full blocks
        # The decode read exactly those blocks from the prefill: the relay was right.
        self.assertEqual(self.decode.stats()["kv"]["fetched_blocks"], 2)
        self.assertEqual(self.prefill.stats()["kv"]["sent_blocks"], 2)
        self.assertEqual(self.prefill.stats()["kv"]["pinned_blocks"], 0)
        # The prompt counted once, the output the decode's.
        usage = r.json()["usage"]
        self.assertEqual((usage["prompt_tokens"], usage["completion_tokens"]), (41, 5))
        self.assertNotIn("kv_transfer_params", r.json())
        self.assertEqual(self.metric("troupe_pd_kv_transfer_total", connector="NixlConnector",
                                     outcome="relayed"), 1)
        for phase in ("prefill", "decode", "decode_first_byte"):
            self.assertEqual(self.metric("troupe_pd_phase_duration_seconds_count",
                                         runtime="vllm", phase=phase), 1, phase)
        self.assert_settled()

    def test_streamed_answers_relay_the_decode_stream(self):
        body = chat(stream=True, stream_options={"include_usage": True})
        s = Stream(self.gw.url + "/v1/chat/completions", body)
        events = [sse_data(e) for e in s.events()]
        s.close()
        self.assertEqual(s.status, 200)
        self.assertEqual(events[-1], "[DONE]")
        usage = json.loads(events[-2])["usage"]
        self.assertEqual((usage["prompt_tokens"], usage["completion_tokens"]), (41, 5))
        p, d = self.legs("/v1/chat/completions")
        self.assertEqual(p[0]["json"]["stream"], False)
        self.assertNotIn("stream_options", p[0]["json"])
        self.assertEqual(d[0]["json"]["stream"], True)
        self.assertEqual(d[0]["json"]["stream_options"], {"include_usage": True})
        self.assertEqual(self.decode.stats()["kv"]["fetches"], 1)
        self.assert_settled()

    def test_each_route_caps_its_own_output_field(self):
        routes = {
            "/v1/chat/completions": (chat(max_completion_tokens=7, min_tokens=2),
                                     {"max_completion_tokens": 1}, ("max_tokens", "min_tokens")),
            "/v1/completions": ({"model": MODEL, "prompt": prompt(), "max_tokens": 4},
                                {"max_tokens": 1}, ()),
            "/v1/messages": ({"model": MODEL, "max_tokens": 4,
                              "messages": [{"role": "user", "content": prompt()}]},
                             {"max_tokens": 1}, ()),
            "/v1/responses": ({"model": MODEL, "input": prompt(), "max_output_tokens": 4},
                              {"max_output_tokens": 1}, ()),
        }
        for path, (body, capped, gone) in routes.items():
            with self.subTest(path=path):
                r = post(self.gw.url + path, body)
                self.assertEqual(r.status, 200, r)
                p, d = self.legs(path)
                for k, v in capped.items():
                    self.assertEqual(p[-1]["json"][k], v)
                for k in gone:
                    self.assertNotIn(k, p[-1]["json"])
                self.assertEqual({k: v for k, v in d[-1]["json"].items()
                                  if k != "kv_transfer_params"}, body)
                self.assertEqual(len(d[-1]["json"]["kv_transfer_params"]["remote_block_ids"]), 2)
        self.assertEqual(self.decode.stats()["kv"]["fetches"], 4)
        self.assertEqual(self.decode.stats()["kv"]["fetch_failures"], 0)

    def test_a_fanout_skips_the_prefill_leg(self):
        r = post(self.gw.url + "/v1/chat/completions", chat(n=2))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json()["choices"]), 2)
        p, d = self.legs("/v1/chat/completions")
        self.assertEqual(len(p), 0)
        self.assertNotIn("kv_transfer_params", d[0]["json"])
        self.assertEqual(self.decode.stats()["kv"]["recomputed"], 1)
        self.assertEqual(self.metric("troupe_pd_kv_transfer_total", outcome="fanout"), 1)

    def test_routes_vllm_does_not_serve_in_sequence_are_refused(self):
        r = post(self.gw.url + "/generate", {"text": prompt()})
        self.assertEqual(r.status, 400, r)
        self.assertIn("vLLM", r.json()["error"]["message"])
        self.assertEqual(self.legs("/generate"), ([], []))
        self.assert_settled()

    def test_workers_show_their_runtime(self):
        runtimes = {w["worker_type"]: (w["runtime"], w["runtime_source"]) for w in
                    self.gw.workers()}
        self.assertEqual(runtimes, {"prefill": ("vllm", "registered"),
                                    "decode": ("vllm", "registered")})
        prefill = next(w for w in self.gw.workers() if w["worker_type"] == "prefill")
        # Reported by the worker (its kv_transfer_config): the registration gave no connector.
        self.assertEqual((prefill["kv_connector"], prefill["kv_engine_id"]),
                         ("NixlConnector", "engine-p"))


class SequentialFailureTest(VllmPair):
    def timed(self, path, body):
        t = time.monotonic()
        r = post(self.gw.url + path, body)
        return r, time.monotonic() - t

    def test_a_failed_prefill_never_reaches_the_decode(self):
        self.prefill.configure(fail_status=500)
        r, took = self.timed("/v1/messages", {"model": MODEL, "max_tokens": 3,
                                              "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["type"], "error")  # the route's format
        self.assertIn("prefill", r.json()["error"]["message"])
        self.assertLess(took, 1.5)
        self.assertEqual(self.legs("/v1/messages")[1], [])
        self.assert_settled()

    def test_a_stalled_prefill_ends_at_the_deadline(self):
        self.prefill.configure(stall_ms=60000)
        r, took = self.timed("/v1/chat/completions", chat())
        self.assertEqual(r.status, 504, r)
        self.assertIn("prefill", r.json()["error"]["message"])
        self.assertGreater(took, TIMEOUT_SECS - 0.5)
        self.assertLess(took, TIMEOUT_SECS + 1.5)
        self.assertEqual(self.legs("/v1/chat/completions")[1], [])
        self.assert_settled()

    def test_a_stalled_decode_ends_at_the_request_deadline_not_a_fresh_one(self):
        # The prefill takes ~1 s, the decode never answers: the client gets its 504 at the
        # request's deadline (3 s after it came), not the decode leg's own 3 s later.
        self.prefill.configure(stall_ms=1000)
        self.decode.configure(stall_ms=60000)
        r, took = self.timed("/v1/responses", {"model": MODEL, "input": prompt()})
        self.assertEqual(r.status, 504, r)
        self.assertIn("decode", r.json()["error"]["message"])
        self.assertGreater(took, TIMEOUT_SECS - 0.5)
        self.assertLess(took, TIMEOUT_SECS + 1.5)
        self.assertEqual([len(x) for x in self.legs("/v1/responses")], [1, 1])
        self.assert_settled()

    def test_a_decode_failure_after_the_prefill_is_answered_in_the_route_format(self):
        self.decode.configure(fail_status=503)
        r = post(self.gw.url + "/v1/messages", {"model": MODEL, "max_tokens": 3,
                                                "messages": [{"role": "user",
                                                              "content": prompt()}]})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["type"], "error")
        p, d = self.legs("/v1/messages")
        self.assertEqual((len(p), len(d)), (1, 1))
        # The prefill kept its blocks for a decode that failed: vLLM frees them on its timeout.
        self.assertEqual(self.prefill.stats()["kv"]["pinned_blocks"], 2)
        self.assert_settled()

    def test_a_wrong_handoff_fails_visibly(self):
        # The prefill's blocks expire at once: the params the gateway relays name nothing.
        self.prefill.configure(kv_hold_timeout_ms=0)
        r = post(self.gw.url + "/v1/chat/completions", chat())
        self.assertEqual(r.status, 500, r)
        self.assertIn("KV transfer from the prefill worker failed", r.json()["error"]["message"])
        self.assertEqual(self.decode.stats()["kv"]["fetch_failures"], 1)
        self.assert_settled()

    def test_a_decode_stream_that_breaks_ends_with_an_error_event(self):
        self.decode.configure(drop_after_events=3)
        s = Stream(self.gw.url + "/v1/chat/completions", chat(stream=True))
        events = [sse_data(e) for e in s.events()]
        s.close()
        self.assertEqual(s.status, 200)
        self.assertTrue(any('"error"' in e for e in events), events)
        self.assert_settled()

    def test_the_phases_show_on_admin_requests(self):
        def phase(name):
            reqs = get(self.gw.url + "/admin/requests").json()["requests"]
            return reqs and reqs[0]["phase"] == name and reqs[0]

        for leg, name in ((self.prefill, "prefilling"), (self.decode, "decoding")):
            leg.configure(stall_ms=1000)
            t = threading.Thread(target=post, args=(self.gw.url + "/v1/chat/completions", chat()))
            t.start()
            try:
                entry = wait_until(lambda: phase(name), 3, what=f"phase {name}")
                self.assertEqual(len(entry["workers"]), 2)
            finally:
                t.join()
            leg.configure(stall_ms=0)
        self.assert_settled()

    def test_a_client_leaving_during_the_prefill_cancels_it(self):
        self.prefill.configure(stall_ms=60000)
        # Send, and hang up while the prefill is held.
        sock = socket.create_connection(("127.0.0.1", self.gw.port))
        payload = json.dumps(chat()).encode()
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: " +
                     str(len(payload)).encode() + b"\r\n\r\n" + payload)
        wait_until(lambda: self.prefill.stats()["active"] == 1, 3, what="prefill held")
        sock.close()
        wait_until(lambda: self.prefill.stats()["active"] == 0, 3, what="prefill released")
        self.assertEqual(self.legs("/v1/chat/completions")[1], [])
        self.assertEqual(self.prefill.stats()["kv"]["pins"], 0)  # nothing pinned for nobody
        self.assert_settled()


class MooncakeTest(VllmPair):
    sim_flags = ("--kv-connector", "MooncakeConnector")
    gateway_flags = ("--pd-runtime", "vllm", "--pd-kv-connector", "MooncakeConnector")

    def test_the_gateway_mints_the_transfer_and_names_the_prefill(self):
        r = post(self.gw.url + "/v1/chat/completions", chat())
        self.assertEqual(r.status, 200, r)
        p, d = self.legs("/v1/chat/completions")
        tag = p[0]["json"]["kv_transfer_params"]
        self.assertEqual((tag["do_remote_decode"], tag["do_remote_prefill"]), (True, False))
        self.assertRegex(tag["transfer_id"], r"^xfer-[0-9a-f]{32}$")
        self.assertEqual(d[0]["json"]["kv_transfer_params"], {
            "do_remote_decode": False, "do_remote_prefill": True,
            "transfer_id": tag["transfer_id"], "remote_engine_id": "engine-p",
            "remote_bootstrap_addr": f"http://127.0.0.1:{self.kport}"})
        self.assertEqual(self.decode.stats()["kv"]["fetched_blocks"], 2)
        self.assertEqual(self.metric("troupe_pd_kv_transfer_total",
                                     connector="MooncakeConnector", outcome="minted"), 1)
        # Another request, another transfer id.
        post(self.gw.url + "/v1/chat/completions", chat())
        p, _ = self.legs("/v1/chat/completions")
        self.assertNotEqual(p[1]["json"]["kv_transfer_params"]["transfer_id"], tag["transfer_id"])


class ReportedRuntimeTest(VllmPair):
    """No --pd-runtime: the workers say they run vLLM (`/v1/models` owned_by)."""

    gateway_flags = ()

    def test_the_reported_runtime_is_used(self):
        wait_until(lambda: all(w["runtime"] == "vllm" for w in self.gw.workers()), 5,
                   what="runtimes reported")
        self.assertEqual({w["runtime_source"] for w in self.gw.workers()}, {"reported"})
        r = post(self.gw.url + "/v1/chat/completions", chat())
        self.assertEqual(r.status, 200, r)
        p, d = self.legs("/v1/chat/completions")
        self.assertIn("kv_transfer_params", p[0]["json"])
        self.assertEqual(self.decode.stats()["kv"]["fetches"], 1)


class PostWorkersTest(VllmPair):
    """Registered at run time with smg's spellings."""

    register = "post"
    gateway_flags = ("--pd-disaggregation",)

    def post_workers(self):
        ok = post(self.gw.url + "/workers", {"url": self.prefill.url, "worker_type": "prefill",
                                             "bootstrap_port": self.kport, "runtime": "vllm",
                                             "labels": {"kv_connector": "NixlConnector"}})
        self.assertIn(ok.status, (200, 201, 202), ok)
        ok = post(self.gw.url + "/workers", {"url": self.decode.url, "worker_type": "decode",
                                             "runtime_type": "vLLM"})
        self.assertIn(ok.status, (200, 201, 202), ok)

    def test_registered_runtime_and_bad_values(self):
        r = post(self.gw.url + "/v1/chat/completions", chat())
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.decode.stats()["kv"]["fetches"], 1)
        for bad, word in (({"runtime": "tensorrt"}, "runtime"),
                          ({"kv_connector": "FooConnector"}, "kv_connector"),
                          ({"labels": {"kv_connector": 3}}, "kv_connector")):
            r = post(self.gw.url + "/workers", dict({"url": "http://127.0.0.1:1",
                                                     "worker_type": "prefill"}, **bad))
            self.assertEqual(r.status, 400, r)
            self.assertIn(word, r.json()["error"]["message"])


class FlagsTest(unittest.TestCase):
    def test_bad_pd_runtime_values_stop_start_up(self):
        assert_each_refused(self, ["--pd-runtime", "trtllm"],
                            ["--pd-kv-connector", "LMCacheConnector"])


if __name__ == "__main__":
    unittest.main()
