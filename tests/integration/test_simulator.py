"""troupe-sim on loopback: every endpoint, streaming, usage, the /sim control API, failure
injection, the latency model, the prefix cache and the PD rendezvous.

Runs real simulator processes through harness.Sim (Python standard library only).
"""

import http.client
import json
import signal
import subprocess
import threading
import time
import unittest

from harness import (SIM_BIN, Process, ProcessTestCase, Stream, delete, free_port, get, post,
                     sse_data, sse_name, wait_until)

MODEL = "sim-model"


def chat(content="hello there", **extra):
    body = {"model": MODEL, "messages": [{"role": "user", "content": content}]}
    body.update(extra)
    return body


def read_stream(url, body, timeout=30):
    """(status, headers, [(event name, data str, arrival time)]) of a streamed response."""
    s = Stream(url, body, timeout=timeout)
    try:
        events = [(sse_name(e), sse_data(e), time.monotonic()) for e in s.events()]
        return s.status, s.headers, events
    finally:
        s.close()


def read_until_broken(url, body):
    """Events read before the connection broke, and whether it broke (no clean end)."""
    s = Stream(url, body)
    events = []
    broken = False
    try:
        for e in s.events():
            events.append(sse_data(e))
    except (http.client.IncompleteRead, ConnectionError, ValueError):
        broken = True
    finally:
        s.close()
    return events, broken


def datas(events):
    return [d for _, d, _ in events]


def json_datas(events):
    return [json.loads(d) for _, d, _ in events if d != "[DONE]"]


class SimCase(ProcessTestCase):
    """A test with one zero-latency simulator (`self.s`) unless a test starts its own."""

    flags = ()

    def setUp(self):
        super().setUp()
        self.s = self.sim(*self.flags)
        self.url = self.s.url


class TestGenerate(SimCase):
    def test_text_prompt_counts_tokens_and_caps_output(self):
        r = post(self.url + "/generate",
                 {"text": "one two three four five", "sampling_params": {"max_new_tokens": 5}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers["content-type"], "application/json")
        body = r.json()
        meta = body["meta_info"]
        self.assertEqual(meta["prompt_tokens"], 5)
        self.assertEqual(meta["completion_tokens"], 5)
        self.assertEqual(len(body["text"].split()), 5)
        self.assertEqual(meta["finish_reason"]["type"], "length")
        self.assertEqual(meta["cached_tokens"], 0)
        self.assertIn("id", meta)

    def test_natural_stop_uses_output_tokens(self):
        body = post(self.url + "/generate", {"text": "hi"}).json()
        self.assertEqual(body["meta_info"]["completion_tokens"], 16)
        self.assertEqual(body["meta_info"]["finish_reason"]["type"], "stop")
        body = post(self.url + "/generate",
                    {"text": "hi", "sampling_params": {"max_new_tokens": 40,
                                                       "ignore_eos": True}}).json()
        self.assertEqual(body["meta_info"]["completion_tokens"], 40)

    def test_batches_answer_lists(self):
        r = post(self.url + "/generate", {"text": ["a b", "c d e"],
                                          "sampling_params": {"max_new_tokens": 3}}).json()
        self.assertIsInstance(r, list)
        self.assertEqual([x["meta_info"]["prompt_tokens"] for x in r], [2, 3])
        r = post(self.url + "/generate", {"input_ids": [[1, 2, 3, 4], [5, 6]],
                                          "sampling_params": {"max_new_tokens": 2}}).json()
        self.assertEqual([x["meta_info"]["prompt_tokens"] for x in r], [4, 2])
        self.assertEqual([x["meta_info"]["completion_tokens"] for x in r], [2, 2])
        r = post(self.url + "/generate", {"input_ids": [7, 8, 9]}).json()
        self.assertIsInstance(r, dict)
        self.assertEqual(r["meta_info"]["prompt_tokens"], 3)

    def test_streaming_is_cumulative_and_ends_with_done(self):
        status, headers, events = read_stream(
            self.url + "/generate",
            {"text": "stream me", "stream": True, "sampling_params": {"max_new_tokens": 4}})
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        self.assertEqual(datas(events)[-1], "[DONE]")
        chunks = json_datas(events)
        self.assertEqual(len(chunks), 4)
        texts = [c["text"] for c in chunks]
        for a, b in zip(texts, texts[1:]):
            self.assertTrue(b.startswith(a))
        self.assertIsNone(chunks[0]["meta_info"]["finish_reason"])
        self.assertEqual(chunks[-1]["meta_info"]["finish_reason"]["type"], "length")
        self.assertEqual(chunks[-1]["meta_info"]["completion_tokens"], 4)
        # Same prompt, same words: streaming and not agree.
        full = post(self.url + "/generate",
                    {"text": "stream me", "sampling_params": {"max_new_tokens": 4}}).json()
        self.assertEqual(full["text"], texts[-1])

    def test_logprobs(self):
        r = post(self.url + "/generate", {"text": "a b c", "return_logprob": True,
                                          "sampling_params": {"max_new_tokens": 3}}).json()
        meta = r["meta_info"]
        inp = meta["input_token_logprobs"]
        out = meta["output_token_logprobs"]
        self.assertEqual(len(inp), 3)
        self.assertIsNone(inp[0][0])
        self.assertTrue(all(lp < 0 for lp, _, _ in inp[1:]))
        self.assertEqual(len(out), 3)
        self.assertTrue(all(isinstance(tid, int) and lp < 0 for lp, tid, _ in out))

    def test_bad_requests(self):
        r = post(self.url + "/generate", {"sampling_params": {}})
        self.assertEqual(r.status, 400)
        self.assertIn("text or input_ids", r.json()["error"]["message"])
        r = post(self.url + "/generate", "{not json")
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["error"]["code"], "invalid_json")


class TestOpenAI(SimCase):
    def test_chat_non_streaming_usage_and_n(self):
        r = post(self.url + "/v1/chat/completions", chat("one two three", n=2, max_tokens=3))
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["object"], "chat.completion")
        self.assertTrue(body["id"].startswith("chatcmpl-"))
        self.assertEqual(body["model"], MODEL)
        self.assertEqual([c["index"] for c in body["choices"]], [0, 1])
        for c in body["choices"]:
            self.assertEqual(c["message"]["role"], "assistant")
            self.assertEqual(len(c["message"]["content"].split()), 3)
            self.assertEqual(c["finish_reason"], "length")
        u = body["usage"]
        self.assertEqual(u["prompt_tokens"], 4)  # "user:" + three words
        self.assertEqual(u["completion_tokens"], 6)
        self.assertEqual(u["total_tokens"], 10)
        self.assertEqual(u["prompt_tokens_details"]["cached_tokens"], 0)
        r = post(self.url + "/v1/chat/completions", chat(max_completion_tokens=2)).json()
        self.assertEqual(r["usage"]["completion_tokens"], 2)
        r = post(self.url + "/v1/chat/completions", chat()).json()
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")

    def test_chat_streaming_with_usage(self):
        status, headers, events = read_stream(
            self.url + "/v1/chat/completions",
            chat("stream this", stream=True, max_tokens=5,
                 stream_options={"include_usage": True}))
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        self.assertEqual(datas(events)[-1], "[DONE]")
        chunks = json_datas(events)
        self.assertTrue(all(c["object"] == "chat.completion.chunk" for c in chunks))
        self.assertEqual(chunks[0]["choices"][0]["delta"]["role"], "assistant")
        text = "".join(c["choices"][0]["delta"].get("content") or ""
                       for c in chunks if c["choices"])
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        self.assertEqual(finish[-1], "length")
        usage = chunks[-1]["usage"]
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(usage["completion_tokens"], 5)
        self.assertEqual(usage["prompt_tokens"], 3)
        full = post(self.url + "/v1/chat/completions", chat("stream this", max_tokens=5)).json()
        self.assertEqual(full["choices"][0]["message"]["content"], text)

    def test_chat_logprobs(self):
        r = post(self.url + "/v1/chat/completions", chat(logprobs=True, max_tokens=3)).json()
        content = r["choices"][0]["logprobs"]["content"]
        self.assertEqual(len(content), 3)
        self.assertEqual("".join(c["token"] for c in content), r["choices"][0]["message"]["content"])

    def test_tool_calls(self):
        tools = [{"type": "function", "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                            "days": {"type": "integer"}},
                           "required": ["city"]}}},
                 {"type": "function", "function": {"name": "get_time", "parameters": {}}}]
        r = post(self.url + "/v1/chat/completions",
                 chat("weather?", tools=tools, tool_choice="required")).json()
        choice = r["choices"][0]
        self.assertEqual(choice["finish_reason"], "tool_calls")
        call = choice["message"]["tool_calls"][0]
        self.assertEqual(call["type"], "function")
        self.assertTrue(call["id"].startswith("call_"))
        self.assertEqual(call["function"]["name"], "get_weather")
        self.assertEqual(json.loads(call["function"]["arguments"]), {"city": "sim"})
        self.assertIsNone(choice["message"]["content"])
        self.assertGreater(r["usage"]["completion_tokens"], 0)

        r = post(self.url + "/v1/chat/completions",
                 chat(tools=tools, tool_choice={"type": "function",
                                                "function": {"name": "get_time"}})).json()
        self.assertEqual(r["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
                         "get_time")
        # auto: a tool named by the last user message is called; otherwise text.
        r = post(self.url + "/v1/chat/completions",
                 chat("please call get_time now", tools=tools)).json()
        self.assertEqual(r["choices"][0]["finish_reason"], "tool_calls")
        r = post(self.url + "/v1/chat/completions", chat("just talk", tools=tools)).json()
        self.assertEqual(r["choices"][0]["finish_reason"], "stop")
        r = post(self.url + "/v1/chat/completions",
                 chat("call get_time", tools=tools, tool_choice="none")).json()
        self.assertIsInstance(r["choices"][0]["message"]["content"], str)

        _, _, events = read_stream(self.url + "/v1/chat/completions",
                                   chat(tools=tools, tool_choice="required", stream=True))
        chunks = json_datas(events)
        head = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
        self.assertEqual(head["function"]["name"], "get_weather")
        args = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                       for c in chunks if c["choices"] and "tool_calls" in c["choices"][0]["delta"])
        self.assertEqual(json.loads(args), {"city": "sim"})
        self.assertEqual(chunks[-1]["choices"][0]["finish_reason"], "tool_calls")

    def test_completions(self):
        r = post(self.url + "/v1/completions", {"model": MODEL, "prompt": "a b c",
                                                "max_tokens": 4}).json()
        self.assertEqual(r["object"], "text_completion")
        self.assertEqual(r["usage"]["prompt_tokens"], 3)
        self.assertEqual(r["usage"]["completion_tokens"], 4)
        self.assertEqual(r["choices"][0]["finish_reason"], "length")
        r = post(self.url + "/v1/completions", {"prompt": ["x", "y z"], "n": 2,
                                                "max_tokens": 2}).json()
        self.assertEqual([c["index"] for c in r["choices"]], [0, 1, 2, 3])
        self.assertEqual(r["usage"]["prompt_tokens"], 3)
        self.assertEqual(r["usage"]["completion_tokens"], 8)
        _, _, events = read_stream(self.url + "/v1/completions",
                                   {"prompt": "a b c", "max_tokens": 4, "stream": True,
                                    "stream_options": {"include_usage": True}})
        chunks = json_datas(events)
        text = "".join(c["choices"][0]["text"] for c in chunks if c["choices"])
        self.assertEqual(len(text.split()), 4)
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 4)
        self.assertEqual(datas(events)[-1], "[DONE]")
        self.assertEqual(post(self.url + "/v1/completions", {"max_tokens": 1}).status, 400)

    def test_embeddings(self):
        r = post(self.url + "/v1/embeddings", {"model": MODEL, "input": ["hello world", "x"],
                                               "dimensions": 8})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["object"], "list")
        self.assertEqual([d["index"] for d in body["data"]], [0, 1])
        v = body["data"][0]["embedding"]
        self.assertEqual(len(v), 8)
        self.assertAlmostEqual(sum(x * x for x in v), 1.0, places=4)
        self.assertEqual(body["usage"]["prompt_tokens"], 3)
        again = post(self.url + "/v1/embeddings", {"input": "hello world",
                                                   "dimensions": 8}).json()
        self.assertEqual(again["data"][0]["embedding"], v)
        b64 = post(self.url + "/v1/embeddings", {"input": "hello world",
                                                 "encoding_format": "base64"}).json()
        self.assertIsInstance(b64["data"][0]["embedding"], str)
        self.assertEqual(post(self.url + "/v1/embeddings", {}).status, 400)

    def test_rerank_on_both_paths(self):
        docs = ["green pear", "a red apple pie", "blue sky"]
        for path in ("/v1/rerank", "/rerank"):
            r = post(self.url + path, {"query": "red apple", "documents": docs})
            self.assertEqual(r.status, 200, r)
            results = r.json()["results"]
            self.assertEqual(results[0]["index"], 1)
            self.assertEqual(results[0]["document"]["text"], "a red apple pie")
            scores = [x["score"] for x in results]
            self.assertEqual(scores, sorted(scores, reverse=True))
        top = post(self.url + "/v1/rerank", {"query": "red apple", "documents": docs,
                                             "top_n": 1, "return_documents": False}).json()
        self.assertEqual(len(top["results"]), 1)
        self.assertNotIn("document", top["results"][0])
        self.assertEqual(post(self.url + "/v1/rerank", {"query": "q"}).status, 400)

    def test_model_mismatch_is_404(self):
        r = post(self.url + "/v1/chat/completions", dict(chat(), model="gpt-other"))
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], "model_not_found")
        r = post(self.url + "/v1/messages", {"model": "claude-other", "max_tokens": 5,
                                             "messages": [{"role": "user", "content": "hi"}]})
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["type"], "error")
        self.assertEqual(r.json()["error"]["type"], "not_found_error")


class TestMessages(SimCase):
    def body(self, **extra):
        b = {"model": MODEL, "max_tokens": 3, "system": "be brief",
             "messages": [{"role": "user", "content": "hello claude"}]}
        b.update(extra)
        return b

    def test_non_streaming(self):
        r = post(self.url + "/v1/messages", self.body())
        self.assertEqual(r.status, 200, r)
        m = r.json()
        self.assertEqual(m["type"], "message")
        self.assertEqual(m["role"], "assistant")
        self.assertTrue(m["id"].startswith("msg_"))
        self.assertEqual(m["content"][0]["type"], "text")
        self.assertEqual(len(m["content"][0]["text"].split()), 3)
        self.assertEqual(m["stop_reason"], "max_tokens")
        u = m["usage"]
        self.assertEqual(u["input_tokens"], 6)  # "system: be brief" + "user: hello claude"
        self.assertEqual(u["output_tokens"], 3)
        self.assertEqual(u["cache_read_input_tokens"], 0)
        r = post(self.url + "/v1/messages", self.body(max_tokens=100)).json()
        self.assertEqual(r["stop_reason"], "end_turn")

    def test_streaming_event_sequence(self):
        status, headers, events = read_stream(self.url + "/v1/messages", self.body(stream=True))
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        names = [n for n, _, _ in events]
        self.assertEqual(names, ["message_start", "content_block_start", "ping"] +
                         ["content_block_delta"] * 3 +
                         ["content_block_stop", "message_delta", "message_stop"])
        for name, data, _ in events:
            self.assertEqual(json.loads(data)["type"], name)
        deltas = [json.loads(d)["delta"] for n, d, _ in events if n == "content_block_delta"]
        self.assertTrue(all(d["type"] == "text_delta" for d in deltas))
        md = json.loads(events[-2][1])
        self.assertEqual(md["delta"]["stop_reason"], "max_tokens")
        self.assertEqual(md["usage"]["output_tokens"], 3)
        start = json.loads(events[0][1])["message"]
        self.assertEqual(start["usage"]["input_tokens"], 6)

    def test_tool_use(self):
        tools = [{"name": "lookup", "input_schema": {
            "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]
        r = post(self.url + "/v1/messages",
                 self.body(tools=tools, tool_choice={"type": "tool", "name": "lookup"})).json()
        block = r["content"][0]
        self.assertEqual(block["type"], "tool_use")
        self.assertTrue(block["id"].startswith("toolu_"))
        self.assertEqual(block["input"], {"q": "sim"})
        self.assertEqual(r["stop_reason"], "tool_use")
        _, _, events = read_stream(self.url + "/v1/messages",
                                   self.body(tools=tools, tool_choice={"type": "any"},
                                             stream=True))
        start = json.loads(events[1][1])["content_block"]
        self.assertEqual(start["type"], "tool_use")
        partial = "".join(json.loads(d)["delta"]["partial_json"]
                          for n, d, _ in events if n == "content_block_delta")
        self.assertEqual(json.loads(partial), {"q": "sim"})

    def test_validation_errors_in_anthropic_format(self):
        cases = [({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model"),
                 ({"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
                  "max_tokens"),
                 ({"model": MODEL, "max_tokens": 5}, "messages")]
        for body, field in cases:
            r = post(self.url + "/v1/messages", body)
            self.assertEqual(r.status, 400, body)
            err = r.json()
            self.assertEqual(err["type"], "error")
            self.assertEqual(err["error"]["type"], "invalid_request_error")
            self.assertTrue(err["error"]["message"].startswith(field + ":"), err)


class TestResponses(SimCase):
    def test_create_get_items_delete(self):
        r = post(self.url + "/v1/responses", {"model": MODEL, "input": "tell me a story",
                                              "max_output_tokens": 4})
        self.assertEqual(r.status, 200, r)
        resp = r.json()
        self.assertTrue(resp["id"].startswith("resp_"))
        self.assertEqual(resp["object"], "response")
        self.assertEqual(resp["status"], "completed")
        out = resp["output"][0]
        self.assertEqual(out["type"], "message")
        self.assertEqual(out["content"][0]["type"], "output_text")
        self.assertEqual(len(out["content"][0]["text"].split()), 4)
        self.assertEqual(resp["usage"]["input_tokens"], 5)
        self.assertEqual(resp["usage"]["output_tokens"], 4)

        got = get(self.url + "/v1/responses/" + resp["id"])
        self.assertEqual(got.status, 200)
        self.assertEqual(got.json()["output"], resp["output"])
        items = get(self.url + "/v1/responses/" + resp["id"] + "/input_items").json()
        self.assertEqual(items["object"], "list")
        self.assertEqual(items["data"][0]["content"][0]["text"], "tell me a story")
        d = delete(self.url + "/v1/responses/" + resp["id"])
        self.assertEqual(d.json(), {"id": resp["id"], "object": "response", "deleted": True})
        gone = get(self.url + "/v1/responses/" + resp["id"])
        self.assertEqual(gone.status, 404)
        self.assertEqual(gone.json()["error"]["type"], "invalid_request_error")
        self.assertEqual(delete(self.url + "/v1/responses/resp_nope").status, 404)
        self.assertEqual(post(self.url + "/v1/responses/resp_nope/cancel").status, 404)
        self.assertEqual(get(self.url + "/v1/responses/resp_nope/input_items").status, 404)

    def test_streaming_events(self):
        status, headers, events = read_stream(
            self.url + "/v1/responses", {"input": "hi", "stream": True, "max_output_tokens": 2})
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("text/event-stream"))
        names = [n for n, _, _ in events]
        self.assertEqual(names, ["response.created", "response.in_progress",
                                 "response.output_item.added", "response.content_part.added",
                                 "response.output_text.delta", "response.output_text.delta",
                                 "response.output_text.done", "response.content_part.done",
                                 "response.output_item.done", "response.completed"])
        payloads = [json.loads(d) for _, d, _ in events]
        self.assertEqual([p["type"] for p in payloads], names)
        self.assertEqual([p["sequence_number"] for p in payloads], list(range(len(names))))
        text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
        final = payloads[-1]["response"]
        self.assertEqual(final["status"], "completed")
        self.assertEqual(final["output"][0]["content"][0]["text"], text)
        stored = get(self.url + "/v1/responses/" + final["id"]).json()
        self.assertEqual(stored["status"], "completed")

    def test_store_false_and_previous_response(self):
        r = post(self.url + "/v1/responses", {"input": "no keep", "store": False}).json()
        self.assertEqual(get(self.url + "/v1/responses/" + r["id"]).status, 404)
        first = post(self.url + "/v1/responses", {"input": "first turn " * 20}).json()
        second = post(self.url + "/v1/responses", {"input": "second turn",
                                                   "previous_response_id": first["id"]}).json()
        self.assertGreater(second["usage"]["input_tokens"],
                           first["usage"]["input_tokens"] + first["usage"]["output_tokens"])
        self.assertGreater(second["usage"]["input_tokens_details"]["cached_tokens"], 0)
        r = post(self.url + "/v1/responses", {"input": "x", "previous_response_id": "resp_no"})
        self.assertEqual(r.status, 404)

    def test_background_cancel(self):
        self.s.configure(itl_ms=50)
        r = post(self.url + "/v1/responses", {"input": "slow", "background": True,
                                              "max_output_tokens": 100})
        resp = r.json()
        self.assertEqual(resp["status"], "in_progress")
        self.assertEqual(get(self.url + "/v1/responses/" + resp["id"]).json()["status"],
                         "in_progress")
        c = post(self.url + "/v1/responses/" + resp["id"] + "/cancel")
        self.assertEqual(c.status, 200)
        self.assertEqual(c.json()["status"], "cancelled")
        self.assertEqual(get(self.url + "/v1/responses/" + resp["id"]).json()["status"],
                         "cancelled")
        self.assertEqual(self.s.stats()["active"], 0)
        plain = post(self.url + "/v1/responses", {"input": "x"}).json()
        self.assertEqual(post(self.url + "/v1/responses/" + plain["id"] + "/cancel").status, 400)


class TestInfoAndControl(SimCase):
    def test_info_endpoints(self):
        m = get(self.url + "/v1/models").json()
        self.assertEqual(m["object"], "list")
        self.assertEqual(m["data"][0]["id"], MODEL)
        self.assertEqual(m["data"][0]["object"], "model")
        self.assertEqual(m["data"][0]["owned_by"], "sglang")
        self.assertIn("created", m["data"][0])
        info = get(self.url + "/get_model_info").json()
        self.assertEqual(info["model_path"], MODEL)
        self.assertTrue(info["is_generation"])
        server = get(self.url + "/get_server_info").json()
        self.assertEqual(server["disaggregation_mode"], "null")
        self.assertEqual(server["served_model_name"], MODEL)
        load = get(self.url + "/get_load").json()
        self.assertEqual(load[0]["dp_rank"], 0)
        self.assertEqual(load[0]["num_reqs"], 0)
        self.assertEqual(get(self.url + "/health").status, 200)
        self.assertEqual(get(self.url + "/health_generate").status, 200)

    def test_unknown_path_and_method(self):
        r = get(self.url + "/v2/nothing")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        r = get(self.url + "/v1/chat/completions")
        self.assertEqual(r.status, 405)
        self.assertEqual(r.headers["allow"], "POST")

    def test_request_log(self):
        self.s.clear()
        post(self.url + "/v1/chat/completions?trace=1", chat("logged"),
             headers={"X-Request-Id": "abc-123"})
        get(self.url + "/v1/models")
        get(self.url + "/health")
        self.s.stats()
        post(self.url + "/generate", "not json")
        log = self.s.requests()
        self.assertEqual([e["path"] for e in log],
                         ["/v1/chat/completions?trace=1", "/v1/models", "/generate"])
        first = log[0]
        self.assertEqual(first["method"], "POST")
        self.assertEqual(first["headers"]["x-request-id"], "abc-123")
        self.assertEqual(first["headers"]["content-type"], "application/json")
        self.assertEqual(first["json"]["messages"][0]["content"], "logged")
        self.assertEqual(json.loads(first["body"]), first["json"])
        self.assertLessEqual(abs(first["time"] - time.time()), 60)
        self.assertIsNone(log[2]["json"])
        self.s.clear()
        self.assertEqual(self.s.requests(), [])

    def test_request_log_is_bounded(self):
        s = self.sim("--request-log-size", "3")
        for i in range(5):
            get(s.url + f"/v1/models?i={i}")
        self.assertEqual([e["path"] for e in s.requests()],
                         ["/v1/models?i=2", "/v1/models?i=3", "/v1/models?i=4"])

    def test_config_api(self):
        cfg = self.s.configure(itl_ms=3, output_tokens=2)
        self.assertEqual(cfg["itl_ms"], 3)
        self.assertEqual(cfg["output_tokens"], 2)
        for knob in ("error_rate", "fail_status", "stall_ms", "drop_after_events",
                     "ttft_base_ms", "prefill_us_per_token", "itl_ms", "output_tokens",
                     "load_slowdown", "health_status"):
            self.assertIn(knob, cfg)
        self.assertEqual(cfg["model_id"], MODEL)
        body = post(self.url + "/generate", {"text": "x"}).json()
        self.assertEqual(body["meta_info"]["completion_tokens"], 2)
        self.assertEqual(post(self.url + "/sim/config", {"itl_msx": 1}).status, 400)
        self.assertEqual(post(self.url + "/sim/config", {"error_rate": 3}).status, 400)
        self.assertEqual(get(self.url + "/sim/config").json()["itl_ms"], 3)

    def test_stats(self):
        post(self.url + "/generate", {"text": "x"})
        post(self.url + "/generate", {"text": "x"})
        get(self.url + "/v1/models")
        st = self.s.stats()
        self.assertEqual(st["total"], 3)
        self.assertEqual(st["by_path"], {"/generate": 2, "/v1/models": 1})
        self.assertEqual(st["active"], 0)
        self.assertEqual(set(st["cache"]), {"blocks", "hits", "misses"})
        for k in ("met", "timeouts", "rejected", "skipped"):
            self.assertEqual(st["rendezvous"][k], 0)

    def test_active_counts_requests_in_flight(self):
        self.s.configure(ttft_base_ms=400)
        t = threading.Thread(target=post, args=(self.url + "/generate", {"text": "x"}))
        t.start()
        time.sleep(0.15)
        self.assertEqual(self.s.stats()["active"], 1)
        self.assertEqual(get(self.url + "/get_load").json()[0]["num_reqs"], 1)
        t.join()
        self.assertEqual(self.s.stats()["active"], 0)


class TestFailureInjection(SimCase):
    def test_fail_status_flag_and_knob(self):
        s = self.sim("--fail-status", "503")
        r = post(s.url + "/v1/chat/completions", chat())
        self.assertEqual(r.status, 503)
        self.assertIn("error", r.json())
        r = post(s.url + "/v1/messages", {"model": MODEL, "max_tokens": 1,
                                          "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(r.status, 503)
        self.assertEqual(r.json()["type"], "error")
        self.assertEqual(get(s.url + "/health").status, 200)  # info endpoints unaffected
        self.assertEqual(get(s.url + "/v1/models").status, 200)
        s.configure(fail_status=0)
        self.assertEqual(post(s.url + "/v1/chat/completions", chat()).status, 200)

    def test_error_rate(self):
        self.s.configure(error_rate=1.0)
        r = post(self.url + "/generate", {"text": "x"})
        self.assertEqual(r.status, 500)
        self.assertEqual(r.json()["error"]["type"], "server_error")
        self.s.configure(error_rate=0.5)
        codes = [post(self.url + "/generate", {"text": "x"}).status for _ in range(60)]
        self.assertTrue(10 < codes.count(500) < 50, codes)
        self.assertEqual(codes.count(500) + codes.count(200), 60)

    def test_stall_delays_then_answers(self):
        self.s.configure(stall_ms=300)
        t0 = time.monotonic()
        r = post(self.url + "/generate", {"text": "x"})
        self.assertEqual(r.status, 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.28)

    def test_stall_forever_released_on_disconnect(self):
        self.s.configure(stall_ms=1e12)
        with self.assertRaises(OSError):  # socket.timeout is an OSError
            post(self.url + "/generate", {"text": "x"}, timeout=0.3)
        deadline = time.time() + 3
        while self.s.stats()["active"] != 0 and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.s.stats()["active"], 0)

    def test_drop_after_events_streaming(self):
        self.s.configure(drop_after_events=3)
        events, broken = read_until_broken(self.url + "/v1/chat/completions",
                                           chat(stream=True))
        self.assertTrue(broken)
        self.assertEqual(len(events), 3)
        self.assertNotIn("[DONE]", events)
        # Non-streaming requests are answered normally unless N is 0.
        self.assertEqual(post(self.url + "/v1/chat/completions", chat()).status, 200)

    def test_drop_without_response(self):
        self.s.configure(drop_after_events=0)
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            post(self.url + "/v1/chat/completions", chat())
        self.s.configure(drop_after_events=-1)
        self.assertEqual(post(self.url + "/v1/chat/completions", chat()).status, 200)

    def test_health_status(self):
        port = free_port()
        p = self.start(Process([SIM_BIN, "--port", str(port), "--health-status", "503"],
                               f"sim-{port}"))
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: get(url + "/v1/models", timeout=1).status == 200, 10, what="sim")
        self.assertEqual(get(url + "/health").status, 503)
        self.assertEqual(get(url + "/health_generate").status, 503)
        self.assertEqual(post(url + "/generate", {"text": "x"}).status, 200)
        self.s.configure(health_status=500)
        self.assertEqual(get(self.url + "/health").status, 500)
        self.s.configure(health_status=200)
        self.assertEqual(get(self.url + "/health").status, 200)
        self.assertTrue(p.alive())


class TestLatencyAndCache(ProcessTestCase):
    def test_ttft_and_itl_pace_the_stream(self):
        s = self.sim("--ttft-base-ms", "200", "--itl-ms", "60", "--prefill-us-per-token", "0",
                     zero_latency=False)
        t0 = time.monotonic()
        _, _, events = read_stream(s.url + "/v1/chat/completions", chat(stream=True,
                                                                        max_tokens=4))
        tokens = [t for _, d, t in events
                  if d != "[DONE]" and json.loads(d)["choices"][0]["delta"].get("content")]
        self.assertEqual(len(tokens), 4)
        self.assertGreaterEqual(tokens[0] - t0, 0.18)
        gaps = [b - a for a, b in zip(tokens, tokens[1:])]
        self.assertTrue(all(g >= 0.045 for g in gaps), gaps)  # flushed one by one
        t0 = time.monotonic()
        post(s.url + "/v1/chat/completions", chat(max_tokens=4))
        self.assertGreaterEqual(time.monotonic() - t0, 0.2 + 3 * 0.06 - 0.03)

    def test_load_slowdown(self):
        s = self.sim("--ttft-base-ms", "150", "--itl-ms", "0", "--prefill-us-per-token", "0",
                     "--load-slowdown", "1.0", zero_latency=False)
        t0 = time.monotonic()
        post(s.url + "/generate", {"text": "alone"})
        alone = time.monotonic() - t0
        s.configure(stall_ms=1000)  # hold a second request in flight
        t = threading.Thread(target=post, args=(s.url + "/generate", {"text": "x"}))
        t.start()
        time.sleep(0.1)
        s.configure(stall_ms=0)
        t0 = time.monotonic()
        post(s.url + "/generate", {"text": "crowded"})
        crowded = time.monotonic() - t0
        t.join()
        self.assertGreaterEqual(crowded, 0.28)  # 150 ms x (1 + 1 x (2 - 1))
        self.assertLess(alone, crowded)

    def test_prefix_cache_speeds_up_a_repeated_prompt(self):
        s = self.sim("--ttft-base-ms", "0", "--itl-ms", "0", "--prefill-us-per-token", "300",
                     zero_latency=False)
        prompt = " ".join(f"w{i}" for i in range(1000))  # 1000 tokens: 300 ms to prefill
        t0 = time.monotonic()
        first = post(s.url + "/generate", {"text": prompt}).json()
        cold = time.monotonic() - t0
        t0 = time.monotonic()
        second = post(s.url + "/generate", {"text": prompt + " and more"}).json()
        warm = time.monotonic() - t0
        self.assertEqual(first["meta_info"]["cached_tokens"], 0)
        self.assertEqual(second["meta_info"]["cached_tokens"], 992)  # 62 blocks of 16
        self.assertGreaterEqual(cold, 0.28)
        self.assertLess(warm, cold / 2)
        st = s.stats()["cache"]
        self.assertEqual(st["hits"], 62)
        self.assertEqual(st["blocks"], 62)
        chat_first = post(s.url + "/v1/chat/completions", chat(prompt)).json()
        chat_again = post(s.url + "/v1/chat/completions", chat(prompt)).json()
        self.assertEqual(chat_first["usage"]["prompt_tokens_details"]["cached_tokens"], 0)
        self.assertEqual(chat_again["usage"]["prompt_tokens_details"]["cached_tokens"], 992)
        self.assertEqual(post(s.url + "/flush_cache").status, 200)
        self.assertEqual(s.stats()["cache"]["blocks"], 0)
        after = post(s.url + "/generate", {"text": prompt}).json()
        self.assertEqual(after["meta_info"]["cached_tokens"], 0)


class TestPrefillDecode(ProcessTestCase):
    def pair(self, *decode_flags, prefill_ttft="150"):
        bport = free_port()
        prefill = self.sim("--ttft-base-ms", prefill_ttft, role="prefill", bootstrap_port=bport)
        decode = self.sim("--bootstrap-timeout-ms", "800", *decode_flags, role="decode")
        return prefill, decode, bport

    def test_prefill_and_decode_meet(self):
        prefill, decode, bport = self.pair()
        body = {"text": "hello disaggregated world", "bootstrap_host": "127.0.0.1",
                "bootstrap_port": bport, "bootstrap_room": 4242,
                "sampling_params": {"max_new_tokens": 5}}
        results = {}
        t = threading.Thread(target=lambda: results.update(
            decode=post(decode.url + "/generate", body)))
        t0 = time.monotonic()
        t.start()  # the decode asks first: it must wait for the prefill
        time.sleep(0.05)
        p = post(prefill.url + "/generate", body)
        t.join()
        elapsed = time.monotonic() - t0
        d = results["decode"]
        self.assertEqual(p.status, 200, p)
        self.assertEqual(d.status, 200, d)
        self.assertEqual(p.json()["meta_info"]["completion_tokens"], 1)
        self.assertEqual(d.json()["meta_info"]["completion_tokens"], 5)
        # The decode continues from the prefill's first token.
        self.assertTrue(d.json()["text"].startswith(p.json()["text"]))
        self.assertGreaterEqual(elapsed, 0.14)
        self.assertEqual(decode.stats()["rendezvous"]["met"], 1)
        self.assertEqual(prefill.stats()["rendezvous"]["rooms"], 1)
        self.assertEqual(prefill.requests()[0]["json"]["bootstrap_room"], 4242)

    def test_chat_stream_through_a_pair(self):
        prefill, decode, bport = self.pair()
        body = chat("pd chat", stream=True, max_tokens=3, bootstrap_host="127.0.0.1",
                    bootstrap_port=bport, bootstrap_room=77)
        results = {}
        t = threading.Thread(target=lambda: results.update(
            d=read_stream(decode.url + "/v1/chat/completions", body)))
        t.start()
        p = post(prefill.url + "/v1/chat/completions", dict(body, stream=False))
        t.join()
        self.assertEqual(p.status, 200)
        status, _, events = results["d"]
        self.assertEqual(status, 200)
        self.assertEqual(datas(events)[-1], "[DONE]")
        self.assertEqual(decode.stats()["rendezvous"]["met"], 1)

    def test_decode_without_room_is_rejected(self):
        _, decode, _ = self.pair()
        r = post(decode.url + "/generate", {"text": "x"})
        self.assertEqual(r.status, 400)
        self.assertIn("Disaggregated request received without bootstrap room id",
                      r.json()["error"]["message"])
        r = post(decode.url + "/v1/messages", {"model": MODEL, "max_tokens": 2,
                                               "messages": [{"role": "user", "content": "x"}]})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json()["type"], "error")
        self.assertEqual(decode.stats()["rendezvous"]["rejected"], 2)

    def test_decode_times_out_when_prefill_never_comes(self):
        _, decode, bport = self.pair()
        body = {"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_port": bport,
                "bootstrap_room": 999}
        t0 = time.monotonic()
        r = post(decode.url + "/generate", body)
        elapsed = time.monotonic() - t0
        self.assertEqual(r.status, 500)
        self.assertIn("999", r.json()["error"]["message"])
        self.assertGreaterEqual(elapsed, 0.75)
        self.assertLess(elapsed, 2.5)
        _, _, events = read_stream(decode.url + "/v1/chat/completions",
                                   chat(stream=True, bootstrap_host="127.0.0.1",
                                        bootstrap_port=bport, bootstrap_room=1000))
        errors = [json.loads(d) for d in datas(events) if d != "[DONE]" and "error" in d]
        self.assertEqual(len(errors), 1)
        st = decode.stats()["rendezvous"]
        self.assertEqual(st["timeouts"], 2)
        self.assertEqual(st["met"], 0)

    def test_unreachable_bootstrap_server_times_out(self):
        decode = self.sim("--bootstrap-timeout-ms", "300", role="decode")
        r = post(decode.url + "/generate", {"text": "x", "bootstrap_host": "127.0.0.1",
                                            "bootstrap_port": free_port(), "bootstrap_room": 1})
        self.assertEqual(r.status, 500)
        self.assertEqual(decode.stats()["rendezvous"]["timeouts"], 1)

    def test_null_bootstrap_port_skips_the_rendezvous(self):
        _, decode, _ = self.pair()
        r = post(decode.url + "/generate", {"text": "x", "bootstrap_host": "127.0.0.1",
                                            "bootstrap_port": None, "bootstrap_room": 5,
                                            "return_logprob": True})
        self.assertEqual(r.status, 200)
        meta = r.json()["meta_info"]
        self.assertIn("output_token_logprobs", meta)
        self.assertNotIn("input_token_logprobs", meta)  # they come from the prefill
        st = decode.stats()["rendezvous"]
        self.assertEqual((st["skipped"], st["met"]), (1, 0))

    def test_batch_rooms(self):
        prefill, decode, bport = self.pair(prefill_ttft="50")
        body = {"text": ["a", "b"], "bootstrap_host": ["127.0.0.1", "127.0.0.1"],
                "bootstrap_port": [bport, bport], "bootstrap_room": [11, 12],
                "sampling_params": {"max_new_tokens": 2}}
        results = {}
        t = threading.Thread(target=lambda: results.update(
            d=post(decode.url + "/generate", body)))
        t.start()
        p = post(prefill.url + "/generate", body)
        t.join()
        self.assertEqual(p.status, 200)
        self.assertEqual(len(p.json()), 2)
        self.assertEqual(results["d"].status, 200, results["d"])
        self.assertEqual(decode.stats()["rendezvous"]["met"], 2)
        self.assertEqual(prefill.stats()["rendezvous"]["rooms"], 2)

    def test_bootstrap_server_long_poll(self):
        bport = free_port()
        prefill = self.sim("--ttft-base-ms", "200", role="prefill", bootstrap_port=bport)
        boot = f"http://127.0.0.1:{bport}"
        self.assertEqual(get(boot + "/bootstrap/rooms/5").status, 404)
        t = threading.Thread(target=post, args=(prefill.url + "/generate",
                                                {"text": "x", "bootstrap_room": 5}))
        t0 = time.monotonic()
        t.start()
        r = get(boot + "/bootstrap/rooms/5?wait_ms=5000")
        waited = time.monotonic() - t0
        t.join()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["state"], "ready")
        self.assertGreaterEqual(waited, 0.15)
        self.assertLess(waited, 2)
        self.assertEqual(get(prefill.url + "/get_server_info").json()["disaggregation_mode"],
                         "prefill")


def long_prompt(words=40, word="kv"):
    return " ".join(f"{word}{i}" for i in range(words))


class TestVllmPrefillDecode(ProcessTestCase):
    """The vLLM roles: the prefill pins its blocks and names them in kv_transfer_params, the
    decode reads them from the prefill's KV side channel (NIXL's, or Mooncake's by transfer id)."""

    PREFILL_PARAMS = {"do_remote_decode": True, "do_remote_prefill": False,
                      "remote_engine_id": None, "remote_block_ids": None,
                      "remote_host": None, "remote_port": None}

    def pair(self, *flags, decode_flags=()):
        kport = free_port()
        prefill = self.sim("--runtime", "vllm", "--kv-engine-id", "engine-p", *flags,
                           role="prefill", bootstrap_port=kport)
        decode = self.sim("--runtime", "vllm", "--bootstrap-timeout-ms", "2000", *flags,
                          *decode_flags, role="decode")
        return prefill, decode, kport

    def prefill_leg(self, prefill, body, path="/v1/chat/completions"):
        cap = "max_output_tokens" if path == "/v1/responses" else "max_tokens"
        leg = dict(body, stream=False, kv_transfer_params=self.PREFILL_PARAMS, **{cap: 1})
        leg.pop("stream_options", None)
        r = post(prefill.url + path, leg)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_nixl_handoff_names_the_full_blocks_and_frees_them_when_read(self):
        prefill, decode, kport = self.pair()
        body = chat(long_prompt(40), max_tokens=5)  # "user:" + 40 words: 41 tokens, 2 blocks
        p = self.prefill_leg(prefill, body)
        self.assertEqual(p["usage"]["completion_tokens"], 1)
        self.assertEqual(p["choices"][0]["finish_reason"], "length")
        params = p["kv_transfer_params"]
        self.assertEqual(params["do_remote_prefill"], True)
        self.assertEqual(params["do_remote_decode"], False)
        self.assertEqual(params["remote_engine_id"], "engine-p")
        self.assertEqual(params["remote_host"], "127.0.0.1")
        self.assertEqual(params["remote_port"], kport)
        self.assertEqual(len(params["remote_block_ids"]), 2)
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 2)

        d = post(decode.url + "/v1/chat/completions", dict(body, kv_transfer_params=params))
        self.assertEqual(d.status, 200, d)
        self.assertEqual(d.json()["usage"]["prompt_tokens"], 41)
        self.assertEqual(d.json()["usage"]["completion_tokens"], 5)
        self.assertNotIn("kv_transfer_params", d.json())
        dk, pk = decode.stats()["kv"], prefill.stats()["kv"]
        self.assertEqual((dk["fetches"], dk["fetched_blocks"], dk["recomputed"]), (1, 2, 0))
        self.assertEqual((pk["pinned_blocks"], pk["sent_blocks"], pk["pins"]), (0, 2, 1))

        # Read once: the same params again name blocks that are gone.
        again = post(decode.url + "/v1/chat/completions", dict(body, kv_transfer_params=params))
        self.assertEqual(again.status, 500, again)
        self.assertIn("KV transfer from the prefill worker failed", again.json()["error"]["message"])
        self.assertIn("not pinned", again.json()["error"]["message"])
        self.assertEqual(decode.stats()["kv"]["fetch_failures"], 1)

    def test_a_wrong_relay_fails_visibly(self):
        prefill, decode, _ = self.pair()
        params = self.prefill_leg(prefill, chat(long_prompt(40)))["kv_transfer_params"]
        # Another prompt, the first one's blocks.
        other = post(decode.url + "/v1/chat/completions",
                     chat(long_prompt(40, word="other"), kv_transfer_params=params))
        self.assertEqual(other.status, 500, other)
        self.assertIn("holds another prompt", other.json()["error"]["message"])
        # Another engine's id.
        wrong = post(decode.url + "/v1/chat/completions",
                     chat(long_prompt(40), kv_transfer_params=dict(params,
                                                                   remote_engine_id="engine-x")))
        self.assertEqual(wrong.status, 500, wrong)
        self.assertIn("engine-x", wrong.json()["error"]["message"])
        # Params that say where nothing is.
        bad = post(decode.url + "/v1/chat/completions",
                   chat(long_prompt(40), kv_transfer_params={"do_remote_prefill": True}))
        self.assertEqual(bad.status, 400, bad)
        self.assertIn("remote_engine_id, remote_block_ids, remote_host, remote_port",
                      bad.json()["error"]["message"])
        typed = post(decode.url + "/v1/chat/completions",
                     chat(kv_transfer_params=dict(params, remote_port="x")))
        self.assertEqual(typed.status, 400, typed)
        # The refusals freed nothing: the right prompt still gets its blocks.
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 2)
        self.assertEqual(prefill.stats()["kv"]["refused_reads"], 2)
        ok = post(decode.url + "/v1/chat/completions",
                  chat(long_prompt(40), kv_transfer_params=params))
        self.assertEqual(ok.status, 200, ok)

    def test_unread_blocks_expire_after_the_hold_timeout(self):
        prefill, decode, _ = self.pair("--kv-hold-timeout-ms", "200")
        params = self.prefill_leg(prefill, chat(long_prompt(40)))["kv_transfer_params"]
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 2)
        wait_until(lambda: prefill.stats()["kv"]["expired_blocks"] == 2, 5, what="expiry")
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 0)
        r = post(decode.url + "/v1/chat/completions",
                 chat(long_prompt(40), kv_transfer_params=params))
        self.assertEqual(r.status, 500, r)

    def test_decode_without_params_computes_the_prompt_itself(self):
        _, decode, _ = self.pair()
        r = post(decode.url + "/v1/chat/completions", chat(long_prompt(40)))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(decode.stats()["kv"]["recomputed"], 1)
        self.assertEqual(decode.stats()["kv"]["fetches"], 0)

    def test_prefill_that_stops_by_itself_hands_nothing_over(self):
        prefill, _, _ = self.pair("--output-tokens", "3")
        leg = chat(long_prompt(40), max_tokens=10, kv_transfer_params=self.PREFILL_PARAMS)
        r = post(prefill.url + "/v1/chat/completions", leg)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["choices"][0]["finish_reason"], "stop")
        self.assertNotIn("kv_transfer_params", r.json())
        self.assertEqual(prefill.stats()["kv"]["pins"], 0)

    def test_a_prompt_shorter_than_a_block_moves_nothing(self):
        prefill, decode, _ = self.pair()
        params = self.prefill_leg(prefill, chat("short prompt"))["kv_transfer_params"]
        self.assertEqual(params["remote_block_ids"], [])
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 0)
        r = post(decode.url + "/v1/chat/completions", chat("short prompt",
                                                           kv_transfer_params=params))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(decode.stats()["kv"]["fetches"], 0)

    def test_the_transfer_is_timed_by_the_latency_model(self):
        # 64 words + "user:" = 65 tokens: 4 blocks = 64 tokens at 3 ms each.
        prefill, decode, _ = self.pair(decode_flags=("--kv-transfer-us-per-token", "3000"))
        body = chat(long_prompt(64), max_tokens=2)
        params = self.prefill_leg(prefill, body)["kv_transfer_params"]
        t0 = time.monotonic()
        r = post(decode.url + "/v1/chat/completions", dict(body, kv_transfer_params=params))
        elapsed = time.monotonic() - t0
        self.assertEqual(r.status, 200, r)
        self.assertGreaterEqual(elapsed, 0.19)

    def test_streamed_decode_and_every_openai_route(self):
        prefill, decode, _ = self.pair()
        body = chat(long_prompt(40), stream=True, max_tokens=3,
                    stream_options={"include_usage": True})
        params = self.prefill_leg(prefill, body)["kv_transfer_params"]
        status, _, events = read_stream(decode.url + "/v1/chat/completions",
                                        dict(body, kv_transfer_params=params))
        self.assertEqual(status, 200)
        self.assertEqual(datas(events)[-1], "[DONE]")
        self.assertEqual(json_datas(events)[-1]["usage"]["completion_tokens"], 3)
        routes = [
            ("/v1/completions", {"model": MODEL, "prompt": long_prompt(40)}),
            ("/v1/messages", {"model": MODEL, "max_tokens": 4,
                              "messages": [{"role": "user", "content": long_prompt(40)}]}),
            ("/v1/responses", {"model": MODEL, "input": long_prompt(40)}),
        ]
        for path, leg in routes:
            with self.subTest(path=path):
                params = self.prefill_leg(prefill, leg, path)["kv_transfer_params"]
                self.assertEqual(len(params["remote_block_ids"]), 2)
                r = post(decode.url + path, dict(leg, kv_transfer_params=params))
                self.assertEqual(r.status, 200, r)
        self.assertEqual(decode.stats()["kv"]["fetches"], 4)
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 0)

    def test_unreachable_side_channel_fails_at_once(self):
        _, decode, _ = self.pair()
        params = {"do_remote_prefill": True, "remote_engine_id": "e", "remote_block_ids": [1],
                  "remote_host": "127.0.0.1", "remote_port": free_port()}
        t0 = time.monotonic()
        r = post(decode.url + "/v1/chat/completions",
                 chat(long_prompt(40), kv_transfer_params=params))
        self.assertEqual(r.status, 500, r)
        self.assertLess(time.monotonic() - t0, 1.5)
        self.assertIn("connect", r.json()["error"]["message"])

    def test_mooncake_blocks_are_named_by_the_transfer_id(self):
        prefill, decode, kport = self.pair("--kv-connector", "MooncakeConnector")
        body = chat(long_prompt(40), max_tokens=2)
        leg = dict(body, max_tokens=1, kv_transfer_params={
            "do_remote_decode": True, "do_remote_prefill": False, "transfer_id": "xfer-1"})
        p = post(prefill.url + "/v1/chat/completions", leg)
        self.assertEqual(p.status, 200, p)
        self.assertNotIn("kv_transfer_params", p.json())  # push-based: nothing to relay
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 2)
        decode_params = {"do_remote_decode": False, "do_remote_prefill": True,
                         "transfer_id": "xfer-1", "remote_engine_id": "engine-p",
                         "remote_bootstrap_addr": f"http://127.0.0.1:{kport}"}
        wrong = post(decode.url + "/v1/chat/completions",
                     dict(body, kv_transfer_params=dict(decode_params, transfer_id="xfer-2")))
        self.assertEqual(wrong.status, 500, wrong)
        d = post(decode.url + "/v1/chat/completions", dict(body, kv_transfer_params=decode_params))
        self.assertEqual(d.status, 200, d)
        self.assertEqual(decode.stats()["kv"]["fetched_blocks"], 2)
        self.assertEqual(prefill.stats()["kv"]["pinned_blocks"], 0)
        # NIXL-shaped params are not what a Mooncake decode worker reads.
        nixl = post(decode.url + "/v1/chat/completions", dict(body, kv_transfer_params={
            "do_remote_prefill": True, "remote_engine_id": "engine-p", "remote_block_ids": [1],
            "remote_host": "127.0.0.1", "remote_port": kport}))
        self.assertEqual(nixl.status, 400, nixl)
        self.assertIn("transfer_id, remote_bootstrap_addr", nixl.json()["error"]["message"])

    def test_the_worker_says_it_is_vllm(self):
        prefill, _, _ = self.pair()
        self.assertEqual(get(prefill.url + "/v1/models").json()["data"][0]["owned_by"], "vllm")
        self.assertEqual(get(prefill.url + "/version").status, 200)
        info = get(prefill.url + "/get_server_info").json()
        self.assertEqual(info["kv_transfer_config"],
                         {"kv_connector": "NixlConnector", "kv_role": "kv_producer",
                          "engine_id": "engine-p"})
        sglang = self.sim()
        self.assertEqual(get(sglang.url + "/v1/models").json()["data"][0]["owned_by"], "sglang")
        self.assertEqual(get(sglang.url + "/version").status, 404)
        self.assertNotIn("kv_transfer_config", get(sglang.url + "/get_server_info").json())

    def test_vllm_roles_need_no_bootstrap_room(self):
        prefill, decode, _ = self.pair()
        self.assertEqual(post(prefill.url + "/v1/chat/completions", chat()).status, 200)
        self.assertEqual(post(decode.url + "/v1/chat/completions", chat()).status, 200)
        self.assertEqual(decode.stats()["rendezvous"]["rejected"], 0)


class TestProcess(unittest.TestCase):
    def test_help_documents_every_flag(self):
        out = subprocess.run([SIM_BIN, "--help"], capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 0)
        for flag in ("--host", "--port", "--model-id", "--role", "--bootstrap-port",
                     "--bootstrap-timeout-ms", "--ttft-base-ms", "--prefill-us-per-token",
                     "--itl-ms", "--output-tokens", "--load-slowdown", "--cache-block-tokens",
                     "--cache-capacity-blocks", "--error-rate", "--fail-status", "--stall-ms",
                     "--drop-after-events", "--health-status", "--request-log-size"):
            self.assertIn(flag, out.stdout)

    def test_bad_flag_value_is_refused(self):
        out = subprocess.run([SIM_BIN, "--error-rate", "2"], capture_output=True, text=True,
                             timeout=10)
        self.assertNotEqual(out.returncode, 0)

    def test_sigterm_with_requests_in_flight_exits_cleanly(self):
        port = free_port()
        p = subprocess.Popen([SIM_BIN, "--port", str(port), "--itl-ms", "1000",
                              "--stall-ms", "0"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: get(url + "/health", timeout=1).status == 200, 10, what="sim")
            stream = Stream(url + "/v1/chat/completions", chat(stream=True))  # generating
            post(url + "/sim/config", {"stall_ms": 1e12})
            held = threading.Thread(target=lambda: self.assertRaises(
                Exception, post, url + "/generate", {"text": "x"}, timeout=5))
            held.start()  # stalled forever
            wait_until(lambda: get(url + "/sim/stats").json()["active"] == 2, 5, what="active")
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(10), 0)
            held.join()
            stream.close()
        finally:
            if p.poll() is None:
                p.kill()

    def test_sigterm_and_sigint_exit_cleanly(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            port = free_port()
            p = subprocess.Popen([SIM_BIN, "--port", str(port)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            try:
                deadline = time.time() + 10
                while time.time() < deadline:
                    try:
                        if get(f"http://127.0.0.1:{port}/health", timeout=1).status == 200:
                            break
                    except OSError:
                        time.sleep(0.05)
                p.send_signal(sig)
                self.assertEqual(p.wait(10), 0)
            finally:
                if p.poll() is None:
                    p.kill()


if __name__ == "__main__":
    unittest.main()
