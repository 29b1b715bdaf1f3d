"""Test harness: real troupe and troupe-sim processes on free loopback ports.

Only the Python standard library is used. Binaries come from the environment (CTest sets
TROUPE_BIN and TROUPE_SIM_BIN) or from ./build/apps.
"""

import atexit
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TROUPE_BIN = os.environ.get("TROUPE_BIN", os.path.join(ROOT, "build", "apps", "troupe", "troupe"))
SIM_BIN = os.environ.get(
    "TROUPE_SIM_BIN", os.path.join(ROOT, "build", "apps", "troupe-sim", "troupe-sim"))


def _ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PORTS = random.Random()
# Ports handed out by free_port() to any test process on this machine: a file per port, named by
# the port and holding the claiming process's pid. CTest runs tests in parallel, and a test that
# picks several ports before its processes bind them (a cluster mesh) could otherwise be handed
# one port twice, or the same port another test was just handed: a bind check alone cannot see
# a port that is promised but not yet bound.
_CLAIMS = os.path.join(tempfile.gettempdir(), "troupe-test-ports")
_MY_CLAIMS = []


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(port):
    """True when this process now holds `port`'s claim. A claim whose process is gone (a test
    killed by CTest's timeout) is taken over."""
    path = os.path.join(_CLAIMS, str(port))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    owner = int(f.read().strip() or "0")
            except (OSError, ValueError):
                return False  # being written by its claimant right now
            if owner == os.getpid() or _pid_alive(owner):
                return False
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        _MY_CLAIMS.append(path)
        return True
    return False


@atexit.register
def _release_claims():
    for path in _MY_CLAIMS:
        try:
            os.unlink(path)
        except OSError:
            pass


def free_port():
    """A TCP port nobody uses right now and no other test was handed. Picked at random below
    the kernel's ephemeral range: ports there are never handed out by the kernel, neither to
    another test's bind(0) nor as the local port of an outgoing connection, either of which
    could take the port before the process it is meant for binds it (Process.start_on still
    copes if that happens). Each port is claimed machine-wide (_CLAIMS) for the life of this
    test process, so one port is never handed out twice while it may still be in use."""
    os.makedirs(_CLAIMS, exist_ok=True)
    top = _ephemeral_start() - 1
    for _ in range(200):
        port = _PORTS.randint(max(1024, top - 12000), top)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if _claim(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    """A complete HTTP response."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        return json.loads(self.body)

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


def request(method, url, body=None, headers=None, timeout=30, context=None):
    """Sends one request on a fresh connection. `body` may be a dict (sent as JSON), str or bytes.
    An https URL is verified with the `ssl.SSLContext` given as `context`."""
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    hdrs = dict(headers or {})
    data = body
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        data = body.encode()
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    try:
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        return Response(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


def get(url, **kw):
    return request("GET", url, **kw)


def post(url, body=None, **kw):
    return request("POST", url, body=body, **kw)


def delete(url, **kw):
    return request("DELETE", url, **kw)


class Stream:
    """A streamed (SSE) response read event by event."""

    def __init__(self, url, body, headers=None, method="POST", timeout=30):
        u = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        path = u.path + ("?" + u.query if u.query else "")
        self.conn.request(method, path, body=json.dumps(body).encode(), headers=hdrs)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self._buf = b""

    def events(self):
        """Yields raw events (str, without the blank line) until the stream ends."""
        while True:
            while b"\n\n" in self._buf:
                raw, self._buf = self._buf.split(b"\n\n", 1)
                yield raw.decode("utf-8", "replace")
            chunk = self.resp.read1(65536) if hasattr(self.resp, "read1") else self.resp.read(1)
            if not chunk:
                if self._buf.strip():
                    yield self._buf.decode("utf-8", "replace")
                return
            self._buf += chunk.replace(b"\r\n", b"\n")

    def close(self):
        self.conn.close()


def sse_data(raw_event):
    """The joined data lines of a raw SSE event."""
    lines = [l[5:].lstrip(" ") if l.startswith("data:") else None for l in raw_event.split("\n")]
    return "\n".join(l for l in lines if l is not None)


def sse_name(raw_event):
    for l in raw_event.split("\n"):
        if l.startswith("event:"):
            return l[6:].strip()
    return ""


def start_refused(*flags):
    """Runs troupe with `flags`, expecting it to refuse to start; returns (exit code, stderr)."""
    p = subprocess.run([TROUPE_BIN, "--port", str(free_port()), *[str(f) for f in flags]],
                       capture_output=True, text=True, timeout=10)
    return p.returncode, p.stderr


def assert_each_refused(test, *flag_lists):
    """Each flag list alone stops troupe at start-up, with an error naming its first flag."""
    for flags in flag_lists:
        with test.subTest(flags=flags):
            code, stderr = start_refused(*flags)
            test.assertNotEqual(code, 0)
            test.assertIn(str(flags[0]), stderr)


def wait_until(predicate, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, http.client.HTTPException) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def model_listed(gateway_url, model):
    """True when `GET /v1/models` answers 200 and lists `model` (it answers 503 while no
    worker is routable yet)."""
    r = get(gateway_url + "/v1/models")
    return r.status == 200 and any(m["id"] == model for m in r.json()["data"])


# What AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer print when they find
# something (a sanitizer build, docs/fuzzing.md "Sanitizer build"); nothing else prints it.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", ": runtime error: ",
                   "SUMMARY: UndefinedBehaviorSanitizer")


def sanitizer_report(output):
    """The sanitizer's report in a process's output, or None."""
    at = min((i for i in (output.find(m) for m in SANITIZER_MARKS) if i >= 0), default=-1)
    return None if at < 0 else output[max(0, output.rfind("\n", 0, at)):][:6000]


class Process:
    """A child process with its output in a log file, stopped on `stop()`."""

    running = set()  # stopped at exit, should a failing test leave one behind

    def __init__(self, args, name):
        self.args = args
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True,
                                     preexec_fn=getattr(self, "preexec", None))
        Process.running.add(self)

    def start_on(self, port, args_for, name, ready_line, ready_also=None, attempts=3):
        """Starts `args_for(port)` and waits for its own log to say it listens on the port.
        A port from `free_port()` may be taken by another test's process before this one
        binds it: then (the process exits) it starts again on a fresh port. Only a process's
        own log line proves the port is its own: a health probe could reach the other one."""
        for attempt in range(attempts):
            self.port = port or free_port()
            Process.__init__(self, args_for(self.port), f"{name}-{self.port}")
            mine = f"127.0.0.1:{self.port}"

            def started():
                out = self.output()
                ok = any(ready_line in l and mine in l for l in out.splitlines())
                return (ok and (ready_also is None or ready_also in out)) or not self.alive()
            wait_until(started, 10, what=f"{name} listening on {self.port}")
            if self.alive():
                return
            if port or attempt == attempts - 1:
                raise AssertionError(f"{name} exited:\n{self.output()}")

    def alive(self):
        return self.proc.poll() is None

    def output(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def kill(self):
        """SIGKILL: a crash, as far as peers can tell."""
        if self.alive():
            self.proc.kill()
            self.proc.wait(5)

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after `timeout`; returns the exit code. Fails (AssertionError)
        when the process's output holds a sanitizer report: every test of a sanitizer build
        checks the processes it ran."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        Process.running.discard(self)
        report = sanitizer_report(self.output())
        if report:
            raise AssertionError(f"{self.name} ({' '.join(map(str, self.args))}):\n{report}")
        return self.proc.returncode


@atexit.register
def _stop_leftovers():
    for p in list(Process.running):
        try:
            p.stop()
        except AssertionError as e:
            print(f"\n--- {e}")


class Sim(Process):
    """A troupe-sim worker."""

    def __init__(self, *flags, port=None, model="sim-model", zero_latency=True, role=None,
                 bootstrap_port=None):
        def args_for(p):
            args = [SIM_BIN, "--port", str(p), "--model-id", model]
            if zero_latency:
                args += ["--ttft-base-ms", "0", "--prefill-us-per-token", "0", "--itl-ms", "0"]
            if role:
                args += ["--role", role]
            if bootstrap_port:
                args += ["--bootstrap-port", str(bootstrap_port)]
            return args + [str(f) for f in flags]
        self.start_on(port, args_for, "sim", f"serving {model} as a")
        self.url = f"http://127.0.0.1:{self.port}"
        self.model = model
        self.bootstrap_port = bootstrap_port
        wait_until(lambda: get(self.url + "/health", timeout=1).status == 200, 10,
                   what=f"simulator on {self.port}")

    def requests(self):
        """What the simulator received: [{method, path, headers, body, json}]."""
        return get(self.url + "/sim/requests").json()["requests"]

    def clear(self):
        delete(self.url + "/sim/requests")

    def configure(self, **knobs):
        r = post(self.url + "/sim/config", knobs)
        assert r.status == 200, r
        return r.json()

    def stats(self):
        return get(self.url + "/sim/stats").json()


class Gateway(Process):
    """A troupe node."""

    def __init__(self, *flags, workers=(), port=None, wait_ready=True, api_key=None,
                 tls_context=None, open_files=None):
        """`tls_context`: the gateway serves HTTPS (its flags say so) and this `ssl.SSLContext`
        verifies it. `open_files`: the process's file descriptor limit (soft and hard), as
        `ulimit -n` would set it."""
        if open_files:
            import resource

            def limit_files():
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
            self.preexec = limit_files
        def args_for(p):
            self.metrics_port = free_port()
            args = [TROUPE_BIN, "--host", "127.0.0.1", "--port", str(p),
                    "--prometheus-port", str(self.metrics_port), "--log-level", "debug"]
            if workers:
                args += ["--worker-urls"] + [w.url if hasattr(w, "url") else w for w in workers]
            if api_key:
                args += ["--api-key", api_key]
            return args + [str(f) for f in flags]
        self.start_on(port, args_for, "troupe", "troupe listening on", ready_also="metrics on")
        scheme = "https" if tls_context else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.api_key = api_key
        self.tls_context = tls_context
        wait_until(lambda: self.get("/liveness", timeout=1).status == 200 or not self.alive(),
                   10, what=f"gateway on {self.port}")
        if not self.alive():
            raise AssertionError(f"gateway exited:\n{self.output()}")
        if wait_ready and workers:
            wait_until(lambda: self.get("/readiness", timeout=1).status == 200, 15,
                       what="gateway readiness")

    def get(self, path, **kw):
        """GET `path` of the API (over HTTPS when the gateway serves it)."""
        return get(self.url + path, context=self.tls_context, **kw)

    def post(self, path, body=None, **kw):
        """POST `path` of the API (over HTTPS when the gateway serves it)."""
        return post(self.url + path, body, context=self.tls_context, **kw)

    def auth(self):
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def workers(self):
        return self.get("/workers", headers=self.auth()).json()["workers"]

    def running_actors(self):
        """How many actors run in the gateway's actor system (requests and PD legs included)."""
        return self.get("/admin/actors", headers=self.auth()).json()["running"]

    def loads(self):
        """{url: in-flight} as the gateway sees it."""
        return {w["url"]: w["load"] for w in self.workers()}

    def metrics(self, prefix=""):
        """{sample: value} of the samples on the metrics port whose names start with `prefix`
        (labels are part of the sample's name)."""
        out = {}
        for line in get(f"http://127.0.0.1:{self.metrics_port}/metrics").text.splitlines():
            if line.startswith(prefix) and line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


class ProcessTestCase(unittest.TestCase):
    """A TestCase that stops every process it started and prints logs of failed tests."""

    def setUp(self):
        self._procs = []

    def start(self, proc):
        self._procs.append(proc)
        return proc

    def sim(self, *flags, **kw):
        return self.start(Sim(*flags, **kw))

    def gateway(self, *flags, **kw):
        return self.start(Gateway(*flags, **kw))

    def tearDown(self):
        failed = any(err for _, err in getattr(self._outcome, "errors", []) if err) or \
            any(err for _, err in getattr(getattr(self._outcome, "result", None), "failures", []) or [])
        reports = []
        for p in reversed(self._procs):
            try:
                code = p.stop()
            except AssertionError as e:  # a sanitizer report: stop the others, then fail
                reports.append(str(e))
                code = p.proc.returncode
            if isinstance(p, Gateway) and code not in (0, None, -signal.SIGKILL):
                print(f"\n--- {p.name} exited with {code}; log:\n{p.output()[-4000:]}")
            elif failed:
                print(f"\n--- {p.name} log:\n{p.output()[-4000:]}")
            try:
                os.unlink(p.log.name)
            except OSError:
                pass
        if reports:
            self.fail("sanitizer report:\n" + "\n".join(reports))
