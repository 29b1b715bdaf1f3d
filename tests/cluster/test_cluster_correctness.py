"""Correctness of the shared registry on real nodes: duplicate node names refused cluster-wide,
records versioned far in the future refused (from a peer and from a state file), and a node
restarted with an old state file converging to the newer records.
"""

import os
import shutil
import signal
import struct
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import ProcessTestCase, delete, free_port, get, post, wait_until  # noqa: E402

HOUR_MS = 3600 * 1000


class Node:
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


def push_versions_ahead(path, by_ms):
    """Rewrites the state file at `path` with every record's version `by_ms` later (the field
    `ver`, a msgpack uint64: 0xcf and eight bytes, as the codec writes wall-clock versions)."""
    data = bytearray(open(path, "rb").read())
    key = b"\xa3ver\xcf"
    at, n = 0, 0
    while (at := data.find(key, at)) >= 0:
        v = struct.unpack(">Q", data[at + 5:at + 13])[0]
        data[at + 5:at + 13] = struct.pack(">Q", v + by_ms)
        at += 13
        n += 1
    assert n > 0, "no version in the state file"
    open(path, "wb").write(bytes(data))


class CorrectnessTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="troupe-correct-")

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start_node(self, node, peers, *extra):
        flags = ["--node-name", node.name, "--cluster-port", str(node.cluster_port),
                 "--health-check-interval-secs", "30", "--shutdown-grace-secs", "1"]
        if peers:
            flags += ["--cluster-peers", ",".join(p.cluster_address for p in peers)]
        node.gw = self.gateway(*flags, *extra, port=node.port)
        return node.gw

    def cluster(self, node):
        return get(node.url + "/admin/cluster", timeout=2).json()

    def up(self, node):
        return sorted(m["name"] for m in self.cluster(node)["members"] if m["state"] == "up")

    def urls(self, node):
        return {w["url"] for w in get(node.url + "/workers", timeout=2).json()["workers"]}

    def metric(self, node, name, labels):
        text = get(f"http://127.0.0.1:{node.gw.metrics_port}/metrics").text
        want = f"{name}{{{labels}}} "
        return next((float(l.split()[-1]) for l in text.splitlines() if l.startswith(want)), 0.0)

    def state_file(self, name):
        return os.path.join(self.tmp, name + ".state")

    def test_a_second_node_with_a_members_name_is_refused_everywhere(self):
        a, b, c = Node("node-a"), Node("node-b"), Node("node-c")
        for n in (a, b, c):
            self.start_node(n, [p for p in (a, b, c) if p is not n])
        for n in (a, b, c):
            wait_until(lambda: self.up(n) == ["node-a", "node-b", "node-c"], 15, what="linked")
        incarnation = next(m["incarnation"] for m in self.cluster(a)["members"]
                           if m["name"] == "node-b")
        twin = Node("node-b")
        self.start_node(twin, [a, b, c])
        for n in (a, c):
            wait_until(lambda: any(x["name"] == "node-b" and
                                   x["refused_address"] == twin.cluster_address
                                   for x in self.cluster(n)["name_conflicts"]), 10,
                       what=f"the duplicate name on {n.name}")
            self.assertIn("two nodes call themselves node-b", n.gw.output())
            self.assertGreaterEqual(
                self.metric(n, "troupe_cluster_refused_total", 'reason="duplicate_name"'), 1)
            member = next(m for m in self.cluster(n)["members"] if m["name"] == "node-b")
            self.assertEqual(member["incarnation"], incarnation)  # the first one stays
            self.assertEqual(member["cluster_address"], b.cluster_address)
        # The two namesakes refuse each other (whichever dials, the other answers its hello with
        # its own), and say so.
        for n in (b, twin):
            wait_until(lambda: self.cluster(n)["name_conflicts"], 20,
                       what=f"the clash on {n.name}'s admin view")
        # A worker registered through the twin's peers is served as before.
        r = post(a.url + "/workers", {"url": "http://127.0.0.1:23000/one"})
        self.assertEqual(r.status, 202, r)
        wait_until(lambda: "http://127.0.0.1:23000/one" in self.urls(b), 5, what="on node-b")

        # The member goes: the twin is node-b now, and the conflict is over.
        b.gw.kill()
        for n in (a, c):
            try:
                wait_until(lambda: self.cluster(n)["name_conflicts"] == [], 5,
                           what=f"the conflict over on {n.name}")
            except AssertionError:
                print(self.cluster(n))
                raise
            wait_until(lambda: "node-b" in self.up(n), 5, what="the twin as node-b")

    def test_records_from_the_far_future_are_refused(self):
        # A node writes a worker, then its state file is moved an hour ahead.
        x = Node("node-x")
        state = self.state_file("x")
        gw = self.gateway("--node-name", "node-x", "--state-file", state, port=x.port)
        self.assertEqual(post(x.url + "/workers", {"url": "http://127.0.0.1:24000/future"}).status,
                         202)
        self.assertEqual(gw.stop(), 0)
        push_versions_ahead(state, HOUR_MS)

        # Restored with the default tolerance: refused, and said so.
        gw = self.gateway("--node-name", "node-x", "--state-file", state, port=x.port)
        self.assertNotIn("http://127.0.0.1:24000/future", self.urls(x))
        self.assertIn("not restored", gw.output())
        self.assertIn("ahead of this node's clock", gw.output())
        gw.proc.send_signal(signal.SIGKILL)  # leaves the file as it is
        gw.proc.wait()

        # A node that tolerates a day takes it, and gossips it: its peer refuses it.
        a = Node("node-a")
        self.start_node(a, [x])
        self.start_node(x, [a], "--state-file", state, "--cluster-max-clock-skew-secs", "86400")
        self.assertIn("http://127.0.0.1:24000/future", self.urls(x))
        wait_until(lambda: self.up(a) == ["node-a", "node-x"], 15, what="linked")
        wait_until(lambda: self.metric(a, "troupe_cluster_refused_total",
                                       'reason="future_version"') >= 1, 5,
                   what="the future record refused by node-a")
        self.assertNotIn("http://127.0.0.1:24000/future", self.urls(a))
        self.assertIn("ahead of this node's clock", a.gw.output())
        # node-a's clock was not dragged: what it writes now is versioned near now.
        self.assertEqual(post(a.url + "/workers", {"url": "http://127.0.0.1:24001/now"}).status,
                         202)
        shared = self.cluster(a)["shared_version"]
        self.assertLess(shared, time.time() * 1000 + 60_000)
        wait_until(lambda: "http://127.0.0.1:24001/now" in self.urls(x), 5, what="on node-x")

    def test_a_node_restarted_with_an_old_state_file_converges(self):
        a, b, c = Node("node-a"), Node("node-b"), Node("node-c")
        for n in (a, b):
            self.start_node(n, [p for p in (a, b, c) if p is not n])
        self.start_node(c, [a, b], "--state-file", self.state_file("c"))
        for n in (a, b, c):
            wait_until(lambda: self.up(n) == ["node-a", "node-b", "node-c"], 15, what="linked")
        old_url, kept_url, new_url = ("http://127.0.0.1:25000/old", "http://127.0.0.1:25001/kept",
                                      "http://127.0.0.1:25002/new")
        r = post(a.url + "/workers", {"url": old_url})
        self.assertEqual(r.status, 202, r)
        old_id = r.json()["id"]
        self.assertEqual(post(a.url + "/workers", {"url": kept_url}).status, 202)
        wait_until(lambda: {old_url, kept_url} <= self.urls(c), 5, what="both on node-c")
        time.sleep(0.5)  # the state file is written 200 ms after the last change
        old_copy = os.path.join(self.tmp, "c.old")
        shutil.copy(self.state_file("c"), old_copy)

        # The cluster moves on: one worker removed, one added, one model card changed.
        self.assertEqual(delete(b.url + f"/workers/{old_id}").status, 200)
        self.assertEqual(post(b.url + "/workers", {"url": new_url}).status, 202)
        wait_until(lambda: self.urls(c) == {kept_url, new_url}, 5, what="node-c up to date")

        # node-c dies and comes back with the old file: it converges to the newer records.
        c.gw.kill()
        shutil.copy(old_copy, self.state_file("c"))
        self.start_node(c, [a, b], "--state-file", self.state_file("c"))
        wait_until(lambda: self.urls(c) == {kept_url, new_url}, 10, what="node-c converged")

        def converged():
            views = [self.cluster(n) for n in (a, b, c)]
            return len({(v["shared_version"], v["registry_digest"]) for v in views}) == 1
        wait_until(converged, 10, what="one registry on every node")
        for n in (a, b):
            self.assertEqual(self.urls(n), {kept_url, new_url})


if __name__ == "__main__":
    unittest.main()
