"""Loopback helpers the benchmarks share: a free port, waiting for an HTTP server to answer."""

import socket
import time
import urllib.request


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=10, context=None):
    """Waits until GET `url` answers 200; raises after `timeout` seconds. `context`: the
    ssl.SSLContext for an https URL."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1, context=context) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")
