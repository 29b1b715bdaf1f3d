#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (tests/fuzz/corpus/<harness>/).

Two sources, both real inputs of the test suites:
- the bodies, streams and messages the unit and integration tests use (transcribed below, each
  naming its test), encoded the way each harness reads its input;
- with --record (the default when a troupe-sim binary is found), what troupe-sim really sends:
  it is started on a free port and asked every API, streamed and not, and the raw HTTP
  requests and responses, SSE bodies and logprobs become seeds.

The output is small and committed; rerun this after a harness changes how it reads its input.
Usage: tests/fuzz/make_corpus.py [--sim PATH] [--no-record]
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")

# -- request bodies (tests/protocol/request_scan_test.cpp, validation_test.cpp,
#    tests/integration/test_gateway.py, test_api_messages.py, test_api_limits.py, test_pd.py) --

MESSAGES = [{"role": "user", "content": "hello"}]
BODIES = [
    {"model": "sim-model", "messages": MESSAGES},
    {"model": "sim-model", "messages": MESSAGES, "stream": True,
     "stream_options": {"include_usage": True}, "n": 2, "max_tokens": 8},
    {"model": "sim-model", "max_tokens": 8, "messages": MESSAGES, "system": "be brief"},
    {"model": "sim-model", "max_tokens": 8, "stream": True,
     "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
     "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}]},
    {"model": "sim-model", "prompt": ["a", "b"], "max_tokens": 4},
    {"model": "sim-model", "prompt": [[1, 2], [3, 4], [5]]},
    {"text": ["a", "b", "c"], "sampling_params": {"max_new_tokens": 8}, "return_logprob": True},
    {"input_ids": [[1, 2], [3]], "stream": True},
    {"model": "sim-model", "input": ["one", "two"], "dimensions": 8},
    {"model": "sim-model", "input": "more", "previous_response_id": "resp_1",
     "instructions": "x", "store": True},
    {"model": "sim-model", "query": "q", "documents": ["a", {"text": "b"}], "top_n": 1},
]
RAW_BODIES = [
    # request_scan_test.cpp
    r'{"model":"m","stream":true,"messages":[{"model":"inner","stream":false}]}',
    r'{"model":"caf\u00e9\/1","max_tokens":99999999999999999999,"messages":[ ],"tools":[{}],"system":""}',
    r'{ "n" : 12 , "messages":  [ {"a":"\"}"} ] ,"z":1}',
    r'{"a":[1,-2.5e+3,0.1,true,false,null,{"b":{}},[]],"s":"x\"y\\z\/\n","n":-0}',
    '{"model":"m","messages":[{"role":"user","content":"h\\u00e9llo \\ud83d\\ude00"}]}',
    '{"k":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}',
    r'{"model":null,"stream":false,"max_tokens":-1}',
    # test_api_limits.py: the hostile bodies of issue 13
    '{"model":"sim-model","messages":' + "[" * 40 + "]" * 40 + "}",
    '{"model":"sim-model","messages":[],"n":1e999}',
    '{"model":"sim-model","max_tokens":8,"messages":"\xff\xfe"}',
    '{"model":"sim-model","messages":[{"content":"\\ud800"}]}',
    '{"model":"sim-model","messages":[]} trailing',
    "",
    "[1,2]",
]


def body_bytes(b):
    return b.encode("utf-8", "surrogateescape") if isinstance(b, str) else \
        json.dumps(b, separators=(",", ":")).encode()


def all_bodies():
    return [body_bytes(b) for b in BODIES] + [body_bytes(b) for b in RAW_BODIES]


# -- SSE streams (tests/protocol/sse_test.cpp, relay_sink_test.cpp) --

SSE = [
    b"data: one\n\ndata: two\n\nevent: x\ndata: three\n\n",
    b"data: a\r\n\r\ndata: b\n\n",
    b"data: done\n\ndata: partial",
    b"event: content_block_delta\ndata: {\"a\":1}\ndata: more\n\n",
    b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
    b": keep-alive\n\nid: 7\nretry: 100\ndata:no-space\n\n",
]

# -- logprobs (tests/protocol/logprobs_test.cpp) --

PREFILL = (b'{"text":"x","meta_info":{"id":"p","input_token_logprobs":'
           b'[[null,1,null],[-0.5,2,null]]}}')
LOGPROBS = [
    (False, PREFILL,
     b'{"text":"yz","meta_info":{"id":"d","input_token_logprobs":[[-1.25,3,null]],"x":1}}'),
    (False, PREFILL, b'{"text":"yz","meta_info":{"id":"d"}}'),
    (False, b'[{"meta_info":{"input_token_logprobs":[[-1,1,null]]}},'
            b'{"meta_info":{"input_token_logprobs":[[-2,2,null]]}}]',
     b'[{"meta_info":{"input_token_logprobs":[[-9,9,null]]}},{"meta_info":{}}]'),
    (True, b'data: {"index":1,"meta_info":{"input_token_logprobs":[[-1,5,null]]}}\n\n'
           b'data: {"index":1,"meta_info":{"input_token_logprobs":[]}}\n\ndata: [DONE]\n\n',
     b'data: {"index":1,"text":"a","meta_info":{"input_token_logprobs":[]}}\n\n'
     b'data: [DONE]\n\n'),
]

# -- msgpack (tests/protocol/cluster_wire_test.cpp): a small encoder, the subset the wire uses --


def mp(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, str):
        s = v.encode()
        return (bytes([0xa0 | len(s)]) if len(s) < 32 else b"\xd9" + bytes([len(s)])) + s
    if isinstance(v, list):
        return bytes([0x90 | len(v)]) + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


RECORD = {"id": "w-1a2b3c4d", "url": "http://10.0.0.7:8000", "type": "prefill", "bport": 8998,
          "model": "llama", "prov": "none", "key": "sk-secret", "models": ["llama", "llama-lora"],
          "ver": 1700000000123, "origin": "node-a:30000", "del": False,
          "stamp": 1700000000123, "reg": 1700000000000}


def envelope(kind, body, **extra):
    m = {"v": 1, "compat": 1, "from": "node-a:30000", "inc": 42, "sent": 1700000000999,
         "kind": kind, "body": body}
    m.update(extra)
    return mp(m)


MSGPACK = [
    envelope("hello", {"api": "10.0.0.1:30000", "addr": "10.0.0.1:7000",
                       "peers": ["10.0.0.2:7000"]}),
    envelope("sync", {"full": True, "records": [RECORD, dict(RECORD, id="w-2", deleted=True,
                                                              type="decode", bport=0)]}),
    envelope("load", {"seq": 7, "loads": {"w-1a2b3c4d": 3, "w-2": 1}, "digest": 99, "rver": 4,
                      "workers": 2, "sver": 1700000000123}),
    envelope("bye", {}),
    envelope("hello", {"api": "10.0.0.1:30000", "addr": "10.0.0.1:7000", "peers": [],
                       "acks": True, "deltas": True, "pfx": 128, "resp": True}),
    # the shared Responses affinity (tests/protocol/response_wire_test.cpp)
    envelope("responses", {"r": {"resp_68a1b2c3d4": "w-1a2b3c4d", "resp_x": "w-2"}}),
    envelope("responses", {"r": {}}),
    # a snapshot for a member linked anew, and prefix updates naming their policy's role
    # (tests/cluster/join_snapshot_test.cpp, tests/protocol/prefix_wire_test.cpp)
    envelope("responses", {"snap": True, "r": {"resp_68a1b2c3d4": "w-1a2b3c4d"}}),
    envelope("prefix", {"bb": 128, "role": "prefill", "w": [{"id": "w-1a2b3c4d",
                                                             "h": b"\x01" * 16}]}),
    envelope("prefix", {"bb": 128, "role": "regular", "snap": True,
                        "w": [{"id": "w-2", "h": b"\x02" * 8}]}),
    # a later version's additive change (cluster_wire_test.cpp)
    mp({"v": 2, "compat": 1, "from": "node-b:30000", "inc": 9, "zone": "eu-west-1", "sent": 5,
        "kind": "sync", "body": {"full": False, "priority": [1, None],
                                 "records": [{"id": "w-2", "url": "http://h:2", "ver": 10,
                                              "weight": 0.5, "origin": "node-b:30000"}]}}),
    mp({"v": 1, "compat": 1, "node": "node-a:30000", "saved": 1700000000000,
        "records": [RECORD]}),
    mp({"v": 3, "compat": 2, "node": "node-z", "records": []}),
]

# -- HTTP requests (tests/transport/http_server_test.cpp, tests/integration/test_slow_client.py,
#    test_api_limits.py) --

HTTP_REQUESTS = [
    b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Content-Length: 2\r\n\r\n{}GET /stream HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nX-Trailer: 1\r\n\r\n",
    b"POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    b"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 64,
    b"GET / HTTP/1.0\r\n\r\nGET /after-close HTTP/1.1\r\n\r\n",
    b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET /bad HTTP/1.1\r\nHost x\r\n\r\n",
    b"POST /half HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
]

# -- HTTP responses of workers (tests/transport/upstream_exchange_test.cpp, relay_sink_test.cpp) --

HTTP_RESPONSES = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n",
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the connection closes",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ntruncated",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"garbage\r\n\r\n",
]


# -- recording troupe-sim --


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exchange(port, raw):
    """Sends one raw request (Connection: close) and returns the raw response."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        out = b""
        while True:
            piece = s.recv(65536)
            if not piece:
                return out
            out += piece


def http_request(method, path, body=None):
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


def split_response(raw):
    """(head, body) with a chunked body decoded."""
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out = b""
        while body:
            size_line, _, rest = body.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            out += rest[:n]
            body = rest[n + 2:]
        body = out
    return head, body


RECORDED_CALLS = [
    ("POST", "/v1/chat/completions", BODIES[0]),
    ("POST", "/v1/chat/completions", dict(BODIES[1], max_tokens=3)),
    ("POST", "/v1/messages", BODIES[2]),
    ("POST", "/v1/messages", dict(BODIES[3], max_tokens=3)),
    ("POST", "/v1/completions", dict(BODIES[4], stream=True)),
    ("POST", "/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 3},
                           "return_logprob": True}),
    ("POST", "/generate", {"text": "hello", "sampling_params": {"max_new_tokens": 3},
                           "return_logprob": True, "stream": True}),
    ("POST", "/generate", {"text": ["a", "b"], "sampling_params": {"max_new_tokens": 2},
                           "return_logprob": True}),
    ("POST", "/v1/embeddings", dict(BODIES[8], dimensions=4)),
    ("POST", "/v1/responses", {"model": "sim-model", "input": "hi", "max_output_tokens": 3,
                               "stream": True}),
    ("POST", "/v1/rerank", BODIES[10]),
    ("GET", "/v1/models", None),
    ("GET", "/get_model_info", None),
    ("POST", "/v1/chat/completions", {"model": "other", "messages": MESSAGES}),
]


def record(sim):
    """Raw requests and responses of a real troupe-sim."""
    port = free_port()
    proc = subprocess.Popen([sim, "--port", str(port), "--ttft-base-ms", "0",
                             "--prefill-us-per-token", "0", "--itl-ms", "0", "--seed", "7",
                             "--log-level", "warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        out = []
        for method, path, body in RECORDED_CALLS:
            raw = http_request(method, path, None if body is None else body_bytes(body))
            out.append((path, body, raw, exchange(port, raw)))
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- writing --


def write(harness, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default=os.environ.get(
        "TROUPE_SIM_BIN", os.path.join(ROOT, "build/apps/troupe-sim/troupe-sim")))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    # Regression inputs (crashes the harnesses found) live next to the seeds and survive.
    for h in os.listdir(CORPUS) if os.path.isdir(CORPUS) else []:
        for name in os.listdir(os.path.join(CORPUS, h)):
            if not name.startswith("regression-"):
                os.remove(os.path.join(CORPUS, h, name))

    bodies = all_bodies()
    sse = list(SSE)
    logprobs = list(LOGPROBS)
    requests = list(HTTP_REQUESTS)
    responses = list(HTTP_RESPONSES)
    if not args.no_record:
        if not os.access(args.sim, os.X_OK):
            sys.exit(f"make_corpus: no troupe-sim at {args.sim} (build first, or --no-record)")
        recorded = record(args.sim)
        by_path = {}
        for path, body, raw_req, raw_res in recorded:
            requests.append(raw_req)
            responses.append(raw_res)
            head, res_body = split_response(raw_res)
            if b"text/event-stream" in head:
                sse.append(res_body)
            else:
                bodies.append(res_body)  # worker JSON is JSON the scanner may meet too
            by_path.setdefault(path, []).append((head, res_body))
        gen = by_path.get("/generate", [])
        if len(gen) >= 3:
            (_, one), (_, streamed), (_, batch) = gen[:3]
            logprobs += [(False, one, one), (True, streamed, streamed), (False, batch, batch)]

    for b in bodies:
        write("request_scan_fuzz", b)
        write("request_scan_diff_fuzz", b)
        # bootstrap_fuzz: an operation byte, a target byte, the body; each body per operation.
        for op in range(6):
            write("bootstrap_fuzz", bytes([op, 0x08 if op % 2 else 0x01]) + b)
    for s in sse:
        write("sse_fuzz", b"\x00" + s)
        write("sse_fuzz", b"\x07" + s)
    for streamed, prefill, decode in logprobs:
        write("logprobs_fuzz", bytes([1 if streamed else 0]) + prefill + b"\x00" + decode)
    for m in MSGPACK:
        write("cluster_wire_fuzz", m)
        write("state_file_fuzz", m)
    for r in requests:
        write("http_server_fuzz", b"\x00" + r)
        write("http_server_fuzz", b"\x01" + r)
        # request_parser_diff_fuzz: at once; in pieces of 3; a byte at a time, small limits, eager.
        for mode in (0x00, 0x03, 0x31):
            write("request_parser_diff_fuzz", bytes([mode]) + r)
    for r in responses:
        write("upstream_response_fuzz", b"\x00" + r)
        write("upstream_response_fuzz", b"\x01" + r)
    for h in sorted(os.listdir(CORPUS)):
        print(f"{h}: {len(os.listdir(os.path.join(CORPUS, h)))} seeds")


if __name__ == "__main__":
    main()
