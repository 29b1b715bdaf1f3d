"""A fake worker for benchmarks: one nginx answering on any number of loopback ports with a
canned chat completion (`POST /v1/chat/completions`), a model listing (`GET /v1/models`) and
`GET /health`. It never looks at a request body, so it costs next to nothing per request:
what a benchmark measures in front of it is the gateway.

Never looking at a body still means reading it off the socket, and nginx discards an unread
body 4 KB per `recvfrom` (NGX_HTTP_DISCARD_BUFFER_SIZE): 26 system calls for a 100 KB prompt,
the worker's cost growing with the prompt. `read_body=True` has nginx read the body into its
1 MB client body buffer instead (Debian's nginx-light always ships the echo module:
`echo_read_request_body`, then an internal redirect to the canned answer), two `recvfrom` per
100 KB request; the answer is the same bytes with the same Content-Length."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

MODEL = "m"
CHAT_ANSWER = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})
MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]})


ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"


def _chat_location(chat_upstream, read_body=False):
    if read_body:
        return f"""location = /v1/chat/completions {{ echo_read_request_body; echo_exec /canned; }}
    location = /canned {{ internal; return 200 '{CHAT_ANSWER}'; }}"""
    if not chat_upstream:
        return f"location = /v1/chat/completions {{ return 200 '{CHAT_ANSWER}'; }}"
    return f"""location = /v1/chat/completions {{
      proxy_pass http://chat_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }}"""


def nginx_preamble(tmp, modules=()):
    """The start of an nginx.conf for a benchmark: one worker process, files under `tmp`, no
    access log, kept-alive connections; it opens the `http` block (the caller closes it).
    `modules`: dynamic modules to load (paths)."""
    loads = "".join(f"load_module {m};\n" for m in modules)
    return f"""
{loads}worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log error;
events {{ worker_connections 19000; }}
http {{
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;"""


def nginx_workdir(prefix):
    """A new temporary folder for an nginx of a benchmark, with the folders its config names
    (nginx_preamble)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    return tmp


def _conf(tmp, ports, chat_upstream=None, read_body=False):
    upstream = (f"upstream chat_upstream {{ server {chat_upstream}; keepalive 256; }}"
                if chat_upstream else "")
    listens = "\n".join(f"    listen 127.0.0.1:{p} backlog=4096;" for p in ports)
    read_body = read_body and not chat_upstream  # a passed-on chat is read by the proxy
    return f"""{nginx_preamble(tmp, [ECHO_MODULE] if read_body else [])}
  client_max_body_size 16m;
  client_body_buffer_size 1m;
  {upstream}
  server {{
{listens}
    default_type application/json;
    location = /health {{ return 200 'ok'; }}
    location = /v1/models {{ return 200 '{MODELS}'; }}
    {_chat_location(chat_upstream, read_body)}
  }}
}}
"""


class FakeWorkers:
    """nginx on `ports`, started at once (prefix: e.g. ["taskset", "-c", "1"]). With
    `chat_upstream` ("127.0.0.1:port", e.g. bench/slow_upstream.py), chat completions are passed
    there instead of answered at once (health checks and /v1/models still are). With
    `read_body`, a chat's body is read whole before the canned answer (see above)."""

    def __init__(self, ports, prefix=(), chat_upstream=None, read_body=False):
        self.ports = list(ports)
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.tmp = nginx_workdir("troupe-fake-worker-")
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(conf, "w") as f:
            f.write(_conf(self.tmp, self.ports, chat_upstream, read_body))
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([*prefix, nginx, "-c", conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(self.urls[-1] + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("the fake worker (nginx) did not start")
                time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
