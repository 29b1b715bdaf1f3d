"""A 202 is a promise: `POST /workers` and `DELETE` answer once the change is durable, on a
linked peer (it confirmed the write) or, for a node alone, in its fsync'd state file.

The SIGKILL test registers a worker on node-a, kills node-a the moment the 202 arrives, and
checks that node-b and node-c both have the worker; over and over, with node-a restarted.
"""

import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import ProcessTestCase, delete, free_port, get, post, wait_until  # noqa: E402

ROUNDS = 8


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


class DurableWriteTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="troupe-durable-")

    def tearDown(self):
        super().tearDown()
        for f in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, f))
        os.rmdir(self.tmp)

    def start_node(self, node, peers, *extra):
        flags = ["--node-name", node.name, "--cluster-port", str(node.cluster_port),
                 "--health-check-interval-secs", "30", "--shutdown-grace-secs", "1"]
        if peers:
            flags += ["--cluster-peers", ",".join(p.cluster_address for p in peers)]
        node.gw = self.gateway(*flags, *extra, port=node.port)

    def cluster(self, node):
        return get(node.url + "/admin/cluster", timeout=2).json()

    def up(self, node):
        return sorted(m["name"] for m in self.cluster(node)["members"] if m["state"] == "up")

    def urls(self, node):
        return {w["url"] for w in get(node.url + "/workers", timeout=2).json()["workers"]}

    def cluster_actor(self, node):
        actors = get(node.url + "/admin/actors").json()["actors"]
        node_id = next(a["id"] for a in actors if a.get("kind") == "cluster_node")
        return get(node.url + f"/admin/actors/{node_id}").json()["state"]

    def test_a_worker_registered_on_a_node_killed_after_its_202_is_on_the_others(self):
        a, b, c = Node("node-a"), Node("node-b"), Node("node-c")
        self.start_node(b, [a, c])
        self.start_node(c, [a, b])
        everyone = ["node-a", "node-b", "node-c"]
        for i in range(ROUNDS):
            self.start_node(a, [b, c])
            for n in (a, b, c):
                wait_until(lambda: self.up(n) == everyone, 15, what=f"{n.name} linked ({i})")
            url = f"http://127.0.0.1:{20000 + i}/round-{i}"
            r = post(a.url + "/workers", {"url": url})
            a.gw.proc.send_signal(signal.SIGKILL)  # the moment the 202 is read
            self.assertEqual(r.status, 202, r)
            # Everything the promise covers is on both survivors (node-b confirmed it; node-c
            # has it from node-a's own push or from node-b's relay).
            for n in (b, c):
                wait_until(lambda: url in self.urls(n), 5, interval=0.02,
                           what=f"round {i}: {url} on {n.name}")
            a.gw.proc.wait()
            for n in (b, c):
                wait_until(lambda: "node-a" not in self.up(n), 5, what="node-a down")

        # A removal is a promise too.
        self.start_node(a, [b, c])
        for n in (a, b, c):
            wait_until(lambda: self.up(n) == everyone, 15, what=f"{n.name} linked")
        # Linked is not yet synced: the restarted node-a gets the records in the sync after.
        wait_until(lambda: any(u.endswith("/round-0") for u in self.urls(a)), 5,
                   what="node-a has round-0 from its peers")
        wid = next(w["id"] for w in get(a.url + "/workers").json()["workers"]
                   if w["url"].endswith("/round-0"))
        r = delete(a.url + f"/workers/{wid}")
        a.gw.proc.send_signal(signal.SIGKILL)
        self.assertEqual(r.status, 200, r)
        for n in (b, c):
            wait_until(lambda: not any(u.endswith("/round-0") for u in self.urls(n)), 5,
                       interval=0.02, what=f"the removal on {n.name}")

    def test_a_node_alone_answers_once_its_state_file_is_on_disk(self):
        a = Node("node-a")
        state = os.path.join(self.tmp, "a.state")
        a.gw = self.gateway("--node-name", "node-a", "--state-file", state,
                            "--health-check-interval-secs", "30", port=a.port)
        for i in range(3):
            url = f"http://127.0.0.1:{21000 + i}/alone-{i}"
            r = post(a.url + "/workers", {"url": url})
            a.gw.proc.send_signal(signal.SIGKILL)
            self.assertEqual(r.status, 202, r)
            a.gw.proc.wait()
            # Restarted from its state file alone, it has every worker it answered 202 for.
            a.gw = self.gateway("--node-name", "node-a", "--state-file", state,
                                "--health-check-interval-secs", "30", port=a.port)
            self.assertIn(url, self.urls(a))

    def test_a_write_no_peer_confirms_falls_back_or_fails_clearly(self):
        a, b = Node("node-a"), Node("node-b")
        self.start_node(b, [a])
        self.start_node(a, [b], "--cluster-ack-timeout-secs", "0.5")
        wait_until(lambda: self.up(a) == ["node-a", "node-b"], 15, what="linked")
        os.kill(b.gw.proc.pid, signal.SIGSTOP)  # linked, but confirms nothing
        try:
            begin = time.monotonic()
            r = post(a.url + "/workers", {"url": "http://127.0.0.1:22000/unconfirmed"})
            took = time.monotonic() - begin
            self.assertEqual(r.status, 503, r)
            self.assertIn("no peer confirmed it", r.json()["error"]["message"])
            self.assertLess(took, 2.0)
            # The change is made here all the same (a retry is answered 409).
            self.assertIn("http://127.0.0.1:22000/unconfirmed", self.urls(a))
            self.assertEqual(self.cluster_actor(a)["writes_unconfirmed"], 1)
        finally:
            os.kill(b.gw.proc.pid, signal.SIGCONT)


if __name__ == "__main__":
    unittest.main()
