"""Helpers of the cluster trust tests: certificates made at run time (never committed), troupe
nodes with TLS flags, the cluster_probe stand-in peer, hostile raw connections and VmRSS."""

import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import ROOT, ProcessTestCase, free_port, get, post  # noqa: E402

PROBE_BIN = os.environ.get("CLUSTER_PROBE_BIN",
                           os.path.join(ROOT, "build", "tests", "cluster", "cluster_probe"))
CERTS_SCRIPT = os.path.join(ROOT, "scripts", "cluster-certs.sh")

HEARTBEAT = 0.25
TIMEOUT = 1.5

# A BASP 0.17 header (32 bytes, network byte order): operation client_handshake, padding,
# flags, payload length 0xFFFFFFFF (4 GiB), operation data, source and destination actor.
BASP_4GIB_HEADER = struct.pack("!BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFFF, 1, 0, 0)


class Certs:
    """A cluster CA with node certificates, a rogue CA with its own, and broken files."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="troupe-certs-")
        self.good = os.path.join(self.dir, "good")
        self.rogue = os.path.join(self.dir, "rogue")
        self._make(self.good, "node-a", "node-b", "node-c", "probe")
        self._make(self.rogue, "node-a", "rogue")
        self.passphrase = "s3cret-Passphrase-77"
        self.encrypted_key = os.path.join(self.dir, "node-b-encrypted.key")
        subprocess.run(["openssl", "pkey", "-in", self.key("node-b"), "-aes256", "-passout",
                        "pass:" + self.passphrase, "-out", self.encrypted_key], check=True,
                       capture_output=True)
        self.not_pem = os.path.join(self.dir, "not-pem.txt")
        with open(self.not_pem, "w") as f:
            f.write("this is not a certificate\n")

    @staticmethod
    def _make(out, *nodes):
        subprocess.run([CERTS_SCRIPT, "--days", "2", out, *nodes], check=True,
                       capture_output=True)

    def cert(self, node, rogue=False):
        return os.path.join(self.rogue if rogue else self.good, node + ".pem")

    def key(self, node, rogue=False):
        return os.path.join(self.rogue if rogue else self.good, node + ".key")

    def ca(self, rogue=False):
        return os.path.join(self.rogue if rogue else self.good, "ca.pem")

    def flags(self, node, rogue=False):
        return ["--cluster-tls-cert", self.cert(node, rogue), "--cluster-tls-key",
                self.key(node, rogue), "--cluster-tls-ca", self.ca(rogue)]

    def remove(self):
        subprocess.run(["rm", "-rf", self.dir], check=False)


class CertsTestCase(ProcessTestCase):
    """A test case whose tests share one `Certs` (made once per class, removed after)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.certs = Certs()

    @classmethod
    def tearDownClass(cls):
        cls.certs.remove()
        super().tearDownClass()


class Node:
    """Ports and name of one cluster member."""

    def __init__(self, name):
        self.name = name
        self.port = free_port()
        self.cluster_port = free_port()
        self.gw = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def cluster_address(self):
        return f"127.0.0.1:{self.cluster_port}"


def cluster_flags(node, peers=(), extra=()):
    f = ["--node-name", node.name, "--cluster-port", str(node.cluster_port),
         "--cluster-heartbeat-secs", str(HEARTBEAT), "--cluster-timeout-secs", str(TIMEOUT),
         "--cluster-gossip-interval-secs", "0.05", "--health-check-interval-secs", "1",
         "--shutdown-grace-secs", "1"]
    if peers:
        f += ["--cluster-peers", ",".join(p.cluster_address for p in peers)]
    return f + list(extra)


def start_with_encrypted_key(test, node, peers, certs):
    """Starts `node` (node-b: the one with an encrypted key) through `test.gateway`, its
    passphrase given only by TROUPE_CLUSTER_TLS_KEY_PASSPHRASE (set for its start alone)."""
    os.environ["TROUPE_CLUSTER_TLS_KEY_PASSPHRASE"] = certs.passphrase
    try:
        node.gw = test.gateway(*cluster_flags(node, peers), "--cluster-tls-cert",
                               certs.cert(node.name), "--cluster-tls-key", certs.encrypted_key,
                               "--cluster-tls-ca", certs.ca(), port=node.port)
    finally:
        del os.environ["TROUPE_CLUSTER_TLS_KEY_PASSPHRASE"]


def create_responses(test, node, sims, count, model="sim-model"):
    """Creates `count` responses ("story 0", "story 1", ...) through `node`: {response id: the
    simulator that got its POST /v1/responses (and so stores it)}."""
    created = {}
    for i in range(count):
        r = post(node.url + "/v1/responses",
                 {"model": model, "input": f"story {i}", "max_output_tokens": 3})
        test.assertEqual(r.status, 200, r)
        rid = r.json()["id"]
        owner = [s for s in sims if any(q["method"] == "POST" and q["path"] == "/v1/responses"
                                        and (q.get("json") or {}).get("input") == f"story {i}"
                                        for q in s.requests())]
        test.assertEqual(len(owner), 1, rid)
        created[rid] = owner[0]
    return created


def response_probes(requests):
    """The paths of the `GET /v1/responses...` searches among a simulator's requests."""
    return [q["path"] for q in requests
            if q["method"] == "GET" and q["path"].startswith("/v1/responses")]


def previous_response_ids(requests):
    """The `previous_response_id` of each POST /v1/responses among a simulator's requests."""
    return [(q.get("json") or {}).get("previous_response_id") for q in requests
            if q["method"] == "POST" and q["path"] == "/v1/responses"]


def cluster_view(node):
    return get(node.url + "/admin/cluster", timeout=2).json()


def members_up(node):
    return sorted(m["name"] for m in cluster_view(node)["members"] if m["state"] == "up")


def worker_urls(node):
    return sorted((w["id"], w["url"]) for w in get(node.url + "/workers").json()["workers"])


def cluster_actor(node):
    """The cluster_node's full state, as `/admin/actors/{id}` shows it."""
    actors = get(node.url + "/admin/actors").json()["actors"]
    summary = next(a for a in actors if a.get("kind") == "cluster_node")
    return get(node.url + f"/admin/actors/{summary['id']}").json()["state"]


def dial_failures(node, address):
    """Failed dials in a row of `address`, as `node`'s cluster_node shows them."""
    for d in cluster_actor(node)["dials"]:
        if d["address"] == address:
            return d["failures"]
    return 0


def metric(node, name, labels=""):
    """The value of one sample of `/metrics`, 0 when absent."""
    text = get(f"http://127.0.0.1:{node.gw.metrics_port}/metrics").text
    want = name + ("{" + labels + "}" if labels else "")
    for line in text.splitlines():
        if line.startswith(want + " "):
            return float(line.split()[-1])
    return 0.0


def probe(*args, timeout=30):
    """Runs cluster_probe; returns (exit code, [events])."""
    p = subprocess.run([PROBE_BIN, *[str(a) for a in args]], capture_output=True, text=True,
                       timeout=timeout)
    events = []
    for line in p.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return p.returncode, events


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def send_and_hold(sock, data, hold, pid):
    """Sends `data` on `sock`, keeps it open `hold` seconds; returns the largest VmRSS (kB) of
    `pid` seen meanwhile (sampled every 100 ms)."""
    sock.sendall(data)
    peak = vm_rss_kb(pid)
    end = time.monotonic() + hold
    while time.monotonic() < end:
        time.sleep(0.1)
        peak = max(peak, vm_rss_kb(pid))
    sock.close()
    return peak


def plain_connection(port):
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def tls_connection(port, cert, key, ca):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
