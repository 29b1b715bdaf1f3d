"""Anthropic Messages and Responses through the gateway, seen on the wire and at the worker."""

import json
import time
import unittest

from harness import ProcessTestCase, Stream, get, post, request, sse_data, sse_name, wait_until

MSGS = [{"role": "user", "content": "hello there"}]


class Messages(ProcessTestCase):
    def test_validation_answers_in_anthropic_format_before_any_worker(self):
        sim = self.sim()
        gw = self.gateway(workers=[sim])
        cases = [
            ({"model": "sim-model", "messages": MSGS}, "max_tokens: Field required"),
            ({"max_tokens": 4, "messages": MSGS}, "model: Field required"),
            ({"model": "sim-model", "max_tokens": 4}, "messages: Field required"),
            ({"model": "sim-model", "max_tokens": 0, "messages": MSGS},
             "max_tokens: Input should be greater than or equal to 1"),
            ({"model": "sim-model", "max_tokens": 4, "messages": []},
             "messages: Input should have at least 1 item"),
        ]
        for body, message in cases:
            r = post(gw.url + "/v1/messages", body)
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.json(), {"type": "error", "error": {
                "type": "invalid_request_error", "message": message}})
        r = post(gw.url + "/v1/messages", "{not json")
        self.assertEqual((r.status, r.json()["error"]["type"]), (400, "invalid_request_error"))
        self.assertEqual([q for q in sim.requests() if q["path"] == "/v1/messages"], [])

    def test_query_parameters_are_accepted(self):
        sim = self.sim()
        gw = self.gateway(workers=[sim])
        body = {"model": "sim-model", "max_tokens": 3, "messages": MSGS}
        for q in ("?beta=true", "?beta=true&unknown=1&x", "?"):
            r = post(gw.url + "/v1/messages" + q, body)
            self.assertEqual(r.status, 200, (q, r))
            self.assertEqual(r.json()["type"], "message")

    def test_stream_events_are_relayed_as_they_arrive(self):
        sim = self.sim(zero_latency=False)
        sim.configure(ttft_base_ms=0, itl_ms=150, prefill_us_per_token=0)
        gw = self.gateway(workers=[sim])
        s = Stream(gw.url + "/v1/messages",
                   {"model": "sim-model", "max_tokens": 4, "stream": True, "messages": MSGS})
        self.assertEqual(s.status, 200)
        self.assertTrue(s.headers["content-type"].startswith("text/event-stream"))
        seen = []
        for ev in s.events():
            seen.append((time.time(), sse_name(ev), json.loads(sse_data(ev))))
        s.close()
        names = [n for _, n, _ in seen]
        self.assertEqual(names[0], "message_start")
        self.assertEqual(names[-1], "message_stop")
        self.assertEqual(names.count("content_block_delta"), 4)
        for _, name, data in seen:
            self.assertEqual(data["type"], name)
        deltas = [t for t, n, _ in seen if n == "content_block_delta"]
        # Paced by the worker: the first delta reached the client well before the last.
        self.assertGreater(deltas[-1] - deltas[0], 0.3)

    def test_event_stream_content_type_matches_case_insensitively(self):
        from provider_stub import ProviderStub
        stub = ProviderStub(models=["sim-model"])
        try:
            gw = self.gateway(workers=[stub.url])
            stub.reply(events=["event: message_start\ndata: {}\n\n", "event: ping\ndata: {}\n\n"],
                       event_delay=0.05, headers=None)
            stub.answer["content_type"] = "Text/Event-Stream; Charset=UTF-8"
            s = Stream(gw.url + "/v1/messages",
                       {"model": "sim-model", "max_tokens": 4, "stream": True, "messages": MSGS})
            self.assertEqual(s.headers.get("transfer-encoding"), "chunked")
            self.assertEqual([sse_name(e) for e in s.events()], ["message_start", "ping"])
            s.close()
        finally:
            stub.stop()


class Responses(ProcessTestCase):
    def test_unset_stream_is_never_sent_and_the_body_is_forwarded_unchanged(self):
        sim = self.sim()
        gw = self.gateway(workers=[sim])
        raw = '{"model": "sim-model",  "input": "hi", "max_output_tokens": 3}'
        r = post(gw.url + "/v1/responses", raw, headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 200, r)
        (got,) = [q for q in sim.requests() if q["path"] == "/v1/responses"]
        self.assertNotIn("stream", got["json"])
        self.assertEqual(got["body"], raw)

    def test_stored_responses_are_served_by_the_worker_that_has_them(self):
        sims = [self.sim(), self.sim()]
        gw = self.gateway(workers=sims)
        created = []
        for i in range(4):
            r = post(gw.url + "/v1/responses",
                     {"model": "sim-model", "input": f"story {i}", "max_output_tokens": 3})
            self.assertEqual(r.status, 200, r)
            created.append(r.json()["id"])
        s = Stream(gw.url + "/v1/responses", {"model": "sim-model", "input": "streamed",
                                              "max_output_tokens": 3, "stream": True})
        evs = list(s.events())
        s.close()
        self.assertEqual(sse_name(evs[0]), "response.created")
        created.append(json.loads(sse_data(evs[0]))["response"]["id"])
        for rid in created:
            for _ in range(2):  # round robin would alternate workers
                r = get(gw.url + f"/v1/responses/{rid}")
                self.assertEqual((r.status, r.json()["id"]), (200, rid), rid)
            r = get(gw.url + f"/v1/responses/{rid}/input_items")
            self.assertEqual(r.status, 200, r)
        # A continuation goes where its previous response is.
        r = post(gw.url + "/v1/responses", {"model": "sim-model", "input": "more",
                                            "previous_response_id": created[0],
                                            "max_output_tokens": 3})
        self.assertEqual(r.status, 200, r)
        r = request("DELETE", gw.url + f"/v1/responses/{created[1]}")
        self.assertEqual((r.status, r.json().get("deleted")), (200, True))
        self.assertEqual(get(gw.url + f"/v1/responses/{created[1]}").status, 404)
        r = post(gw.url + f"/v1/responses/{created[2]}/cancel")
        self.assertEqual(r.status, 400)  # not a background response: the worker says so
        self.assertEqual(get(gw.url + "/v1/responses/resp_unknown").status, 404)

    def test_a_response_this_node_never_saw_is_found_on_the_worker_that_stores_it(self):
        # Created without this node (through another cluster node, or before a restart): the
        # node asks the workers in turn, then sends the request to the one that has it.
        sims = [self.sim(), self.sim(), self.sim()]
        gw = self.gateway(workers=sims)
        direct = post(sims[2].url + "/v1/responses",
                      {"model": "sim-model", "input": "elsewhere", "max_output_tokens": 3})
        self.assertEqual(direct.status, 200, direct)
        rid = direct.json()["id"]
        for sim in sims:
            sim.clear()
        r = get(gw.url + f"/v1/responses/{rid}")
        self.assertEqual((r.status, r.json()["id"]), (200, rid), r)
        self.assertEqual(r.json()["output"], direct.json()["output"])
        lookups = [len([q for q in sim.requests() if q["path"] == f"/v1/responses/{rid}"])
                   for sim in sims]
        # Each worker is asked at most once; the one storing it is asked, then served.
        self.assertEqual(lookups[2], 2, lookups)
        self.assertLessEqual(max(lookups[:2]), 1, lookups)
        # Remembered: the next read goes straight there.
        for sim in sims:
            sim.clear()
        r = get(gw.url + f"/v1/responses/{rid}/input_items")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([len(sim.requests()) for sim in sims], [0, 0, 1])
        # A continuation of a response created elsewhere also reaches its worker.
        other = post(sims[0].url + "/v1/responses",
                     {"model": "sim-model", "input": "first", "max_output_tokens": 3}).json()["id"]
        for sim in sims:
            sim.clear()
        r = post(gw.url + "/v1/responses", {"model": "sim-model", "input": "more",
                                            "previous_response_id": other,
                                            "max_output_tokens": 3})
        self.assertEqual(r.status, 200, r)
        creates = [[q for q in sim.requests() if q["path"] == "/v1/responses"] for sim in sims]
        self.assertEqual([len(c) for c in creates], [1, 0, 0],
                         [[(q["method"], q["path"]) for q in sim.requests()] for sim in sims])
        # Nobody has it: every worker is asked once, then the worker's own 404 in OpenAI's
        # format reaches the client; no load is left behind.
        for sim in sims:
            sim.clear()
        r = get(gw.url + "/v1/responses/resp_nowhere")
        self.assertEqual(r.status, 404, r)
        self.assertIn("message", r.json()["error"])
        asked = sum(len(sim.requests()) for sim in sims)
        self.assertEqual(asked, 4)  # three lookups, then the request itself
        wait_until(lambda: all(v == 0 for v in gw.loads().values()), 3, what="loads 0")


if __name__ == "__main__":
    unittest.main()
