"""Response size limits, when load and breaker outcomes are recorded, configured timeouts."""

import json
import time
import unittest

from harness import ProcessTestCase, Stream, get, post, sse_data, sse_name, wait_until
from provider_stub import ProviderStub

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
MESSAGE = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


class LimitsTestCase(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.upstream = ProviderStub(models=["m"])

    def tearDown(self):
        self.upstream.stop()
        super().tearDown()

    def gateway_for(self, *flags):
        return self.gateway(*flags, workers=[self.upstream.url])


class ResponseSizeLimits(LimitsTestCase):
    def test_a_body_over_the_limit_is_a_502_in_the_routes_format(self):
        gw = self.gateway_for("--max-response-size", "1000")
        self.upstream.reply(body=json.dumps({"pad": "x" * 2000}))
        r = post(gw.url + "/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["error"]["code"], "upstream_too_large")
        r = post(gw.url + "/v1/messages", MESSAGE)
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["error"]["type"], "api_error")
        # Without a Content-Length the body is refused while it is read.
        self.upstream.answer.update(events=['{"pad":"' + "x" * 600, "y" * 600 + '"}'],
                                    content_type="application/json")
        r = post(gw.url + "/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.json()["error"]["code"], "upstream_too_large")
        # Under the limit, the same answer passes.
        self.upstream.reply(body=json.dumps({"ok": True}))
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT).json(), {"ok": True})

    def test_a_long_error_body_is_cut_at_its_limit_never_inside_a_character(self):
        gw = self.gateway_for("--max-error-response-size", "1000")
        # 999 ASCII bytes, then 3-byte characters: the limit falls inside the first of them.
        text = "e" * 999 + "\u20ac" * 20000
        self.upstream.reply(status=500, body=text, headers={"Content-Type": "text/plain"})
        for path, body in (("/v1/chat/completions", CHAT), ("/v1/messages", MESSAGE)):
            r = post(gw.url + path, body)
            self.assertEqual(r.status, 500, r)
            r.body.decode("utf-8")  # strict: valid UTF-8
            self.assertNotIn("\ufffd", r.text)
            err = r.json()["error"]
            self.assertTrue(err["message"].startswith("the worker answered 500: eee"))
            self.assertTrue(err["message"].endswith("[truncated]"), err["message"][-40:])
            self.assertNotIn("\u20ac", err["message"])
            self.assertLess(len(r.body), 2000)
        self.assertEqual(get(gw.url + "/v1/messages").status, 405)

    def test_worker_errors_reach_clients_in_their_apis_format_with_the_workers_status(self):
        gw = self.gateway_for()
        self.upstream.reply(status=429, body={"object": "error", "message": "slow down"})
        r = post(gw.url + "/v1/messages", MESSAGE)
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.json(), {"type": "error", "error": {
            "type": "rate_limit_error", "message": "the worker answered 429: slow down"}})
        own = {"error": {"message": "bad", "type": "invalid_request_error", "code": None}}
        self.upstream.reply(status=400, body=own)
        r = post(gw.url + "/v1/chat/completions", CHAT)
        self.assertEqual((r.status, r.json()), (400, own))


class OutcomeAtTheEnd(LimitsTestCase):
    def test_load_is_held_until_the_stream_ends(self):
        gw = self.gateway_for()
        events = [f"data: {{\"n\":{i}}}\n\n" for i in range(4)] + ["data: [DONE]\n\n"]
        self.upstream.reply(events=events, event_delay=0.3)
        s = Stream(gw.url + "/v1/chat/completions", dict(CHAT, stream=True))
        self.assertEqual(s.status, 200)
        got = iter(s.events())
        first = next(got)  # the head and the first event are here: the stream is not over
        self.assertEqual(json.loads(sse_data(first)), {"n": 0})
        self.assertEqual(gw.loads()[self.upstream.url], 1)
        rest = list(got)
        self.assertEqual(sse_data(rest[-1]), "[DONE]")
        s.close()
        wait_until(lambda: gw.loads()[self.upstream.url] == 0, 5, what="load back to 0")

    def test_a_stream_that_breaks_after_its_head_counts_against_the_breaker(self):
        gw = self.gateway_for("--cb-failure-threshold", "1", "--cb-timeout-duration-secs", "60")
        self.upstream.reply(events=["event: message_start\ndata: {}\n\n"], break_stream=True)
        s = Stream(gw.url + "/v1/messages", dict(MESSAGE, stream=True))
        self.assertEqual(s.status, 200)
        evs = list(s.events())
        s.close()
        self.assertEqual(sse_name(evs[0]), "message_start")
        self.assertEqual(sse_name(evs[-1]), "error")
        self.assertEqual(json.loads(sse_data(evs[-1]))["error"]["type"], "api_error")
        wait_until(lambda: gw.workers()[0]["circuit_breaker"] == "open", 5, what="breaker open")
        self.assertEqual(gw.workers()[0]["failures_total"], 1)


class Timeouts(LimitsTestCase):
    def test_the_request_deadline_comes_from_the_configuration(self):
        gw = self.gateway_for("--request-timeout-secs", "1")
        self.upstream.reply(events=[f"data: {i}\n\n" for i in range(10)], event_delay=0.4)
        start = time.time()
        s = Stream(gw.url + "/v1/chat/completions", dict(CHAT, stream=True))
        evs = list(s.events())
        s.close()
        elapsed = time.time() - start
        self.assertLess(elapsed, 3)
        last = json.loads(sse_data(evs[-1]))
        self.assertEqual(last["error"]["code"], "gateway_timeout")
        self.assertIn("1 s", last["error"]["message"])


if __name__ == "__main__":
    unittest.main()
