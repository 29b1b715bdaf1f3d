"""Loopback helpers the benchmarks share: a free port, waiting for an HTTP server to answer,
the processes a benchmark started."""

import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_binary(build, name):
    """The executable of app `name` (troupe, troupe-sim, troupe-bench) in build directory
    `build`."""
    return os.path.join(os.path.abspath(build), "apps", name, name)


def knows_flag(binary, flag):
    """Whether `binary --help` lists `flag` (a binary built before the flag does not)."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    return flag in out


def cpu_times(pid, children=False):
    """(user, system) CPU time of process `pid` (all its threads), in seconds; with `children`,
    its child processes' added, recursively (nginx's workers), a child gone counting nothing."""
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    user, system = int(fields[11]) / tick, int(fields[12]) / tick
    if children:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        for kid in kids:
            try:
                u, s = cpu_times(int(kid), children=True)
            except OSError:
                continue
            user, system = user + u, system + s
    return user, system


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


class Processes:
    """Processes a benchmark starts (output discarded, or into the open file `log`), stopped
    together, last started first."""

    def __init__(self):
        self.procs = []

    def start(self, args, log=None):
        p = subprocess.Popen([str(a) for a in args], stdout=log or subprocess.DEVNULL,
                             stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []
