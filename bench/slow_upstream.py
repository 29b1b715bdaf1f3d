#!/usr/bin/env python3
"""A chat-completions upstream that holds each request for a while: what keeps load in flight
on a gateway in front of the canned fake worker (bench/fake_worker.py passes its
`POST /v1/chat/completions` here). It reads the request, waits `--hold` seconds (asyncio: any
number of requests wait at once at no CPU), then answers a small completion. Keep-alive.

Usage: bench/slow_upstream.py --port P [--hold 1.0]
"""

import argparse
import asyncio
import json

ANSWER = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)


async def serve(reader, writer, hold):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(hold)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--hold", type=float, default=1.0)
    a = p.parse_args()
    server = await asyncio.start_server(lambda r, w: serve(r, w, a.hold), "127.0.0.1", a.port,
                                        backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
