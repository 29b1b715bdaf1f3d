"""A cluster of three gateway nodes (real troupe and troupe-sim processes on loopback).

Registrations made on one node become routable on the others (propagation timed), removals
follow, load taken through one node shows in another's /workers, a node killed (SIGKILL) or hung
(SIGSTOP) is declared down within the heartbeat bound and its load is dropped, and a restarted
node rejoins and, with --state-file, keeps its workers.
"""

import os
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from cluster_support import (Node, cluster_actor, create_responses,  # noqa: E402
                             previous_response_ids, response_probes)
from harness import (Gateway, ProcessTestCase, delete, free_port, get, post,  # noqa: E402
                     wait_until)

MODEL = "sim-model"
CHAT = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "Hello"}]}

HEARTBEAT = 0.25  # --cluster-heartbeat-secs
TIMEOUT = 1.5     # --cluster-timeout-secs
# A registration reaches every node within this (measured: tens of ms on loopback).
PROPAGATION_BOUND = 1.0
# A hung node is dropped once CAF's connection timeout passes (checked every heartbeat).
HUNG_BOUND = TIMEOUT + 2 * HEARTBEAT + 1.0


def ms(seconds):
    return f"{seconds * 1000:.0f} ms"


class ClusterTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="troupe-cluster-")
        self.nodes = [Node(n) for n in ("node-a", "node-b", "node-c")]

    def tearDown(self):
        # A stopped (SIGSTOP) node cannot handle SIGTERM: let it run again first.
        for n in self.nodes:
            if n.gw and n.gw.alive():
                os.kill(n.gw.proc.pid, signal.SIGCONT)
        super().tearDown()
        for f in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, f))
        os.rmdir(self.tmp)

    # -- cluster set-up --

    def flags(self, node, peers=None, state=False, cluster_port=None):
        peers = [n for n in self.nodes if n is not node] if peers is None else peers
        f = ["--node-name", node.name, "--cluster-port", str(cluster_port or node.cluster_port),
             "--cluster-heartbeat-secs", str(HEARTBEAT), "--cluster-timeout-secs", str(TIMEOUT),
             "--cluster-gossip-interval-secs", "0.05", "--health-check-interval-secs", "1",
             "--shutdown-grace-secs", "1"]
        if peers:
            f += ["--cluster-peers", ",".join(f"127.0.0.1:{p.cluster_port}" for p in peers)]
        if state:
            f += ["--state-file", self.state_file(node)]
        return f

    def state_file(self, node):
        return os.path.join(self.tmp, node.name + ".state")

    def start_node(self, node, **kw):
        node.gw = self.gateway(*self.flags(node, **kw), port=node.port)
        return node.gw

    def start_cluster(self, **kw):
        for n in self.nodes:
            self.start_node(n, **kw)
        for n in self.nodes:
            wait_until(lambda: self.cluster(n)["counts"]["up"] == 3, 10,
                       what=f"{n.name} to see three members up")

    def cluster(self, node):
        return get(node.url + "/admin/cluster", timeout=2).json()

    def member(self, node, name):
        return next((m for m in self.cluster(node)["members"] if m["name"] == name), None)

    def workers(self, node):
        return get(node.url + "/workers", timeout=2).json()["workers"]

    def worker(self, node, url):
        return next((w for w in self.workers(node) if w["url"] == url), None)

    def add_worker(self, node, sim):
        r = post(node.url + "/workers", {"url": sim.url})
        self.assertEqual(r.status, 202, r)
        return r.json()["id"]

    def chat_in_background(self, node):
        done = threading.Event()
        result = {}

        def run():
            try:
                result["response"] = post(node.url + "/v1/chat/completions", CHAT, timeout=30)
            except OSError as e:  # the node was killed under it
                result["error"] = e
            done.set()

        threading.Thread(target=run, daemon=True).start()
        return done, result

    def wait_routable(self, node, url):
        wait_until(lambda: (self.worker(node, url) or {}).get("routable"), 10,
                   what=f"{url} routable on {node.name}")

    # -- tests --

    def test_registration_propagates_to_every_node_and_removal_follows(self):
        a, b, c = self.nodes
        self.start_cluster()
        sim = self.sim()

        start = time.monotonic()
        wid = self.add_worker(a, sim)
        seen = {}
        for n in (b, c):
            wait_until(lambda: self.worker(n, sim.url), PROPAGATION_BOUND, interval=0.005,
                       what=f"the worker on {n.name}")
            seen[n.name] = time.monotonic() - start
        print(f"\npropagation of a registration (POST on node-a, polled every 5 ms): "
              f"node-b {ms(seen['node-b'])}, node-c {ms(seen['node-c'])}")
        for n in (b, c):
            w = self.worker(n, sim.url)
            self.assertEqual((w["id"], w["url"]), (wid, sim.url))

        # Each node checks the worker's health itself, then routes to it.
        for n in (b, c):
            self.wait_routable(n, sim.url)
            r = post(n.url + "/v1/chat/completions", CHAT)
            self.assertEqual(r.status, 200, r)
        self.assertGreaterEqual(len([q for q in sim.requests()
                                     if q["path"] == "/v1/chat/completions"]), 2)

        # The registries converge: same shared version and digest everywhere.
        def converged():
            views = [self.cluster(n) for n in self.nodes]
            return len({(v["shared_version"], v["registry_digest"]) for v in views}) == 1 and \
                all(m["in_sync"] for v in views for m in v["members"])
        wait_until(converged, 5, what="registries in sync")
        # The arrival was measured on the receiving nodes too.
        metrics = get(f"http://127.0.0.1:{b.gw.metrics_port}/metrics").text

        def value(name):
            line = [l for l in metrics.splitlines() if l.startswith(name + " ")]
            return float(line[0].split()[-1]) if line else 0.0
        count = value("troupe_cluster_propagation_seconds_count")
        self.assertGreaterEqual(count, 1)
        print(f"troupe_cluster_propagation_seconds on node-b: {count:.0f} write(s), mean "
              f"{ms(value('troupe_cluster_propagation_seconds_sum') / count)}")
        self.assertIn('troupe_cluster_members{state="up"} 3', metrics)

        start = time.monotonic()
        self.assertEqual(delete(b.url + f"/workers/{wid}").status, 200)
        for n in (a, c):
            wait_until(lambda: self.worker(n, sim.url) is None, PROPAGATION_BOUND,
                       interval=0.005, what=f"the removal on {n.name}")
            seen[n.name] = time.monotonic() - start
        print(f"propagation of a removal (DELETE on node-b): node-a {ms(seen['node-a'])}, "
              f"node-c {ms(seen['node-c'])}")
        self.assertEqual(post(c.url + "/v1/chat/completions", CHAT).status, 404)

        # Registered again (on another node): the tombstone does not keep it away.
        self.assertEqual(self.add_worker(c, sim), wid)
        wait_until(lambda: self.worker(a, sim.url), PROPAGATION_BOUND, what="re-registration")

    def test_load_through_one_node_shows_on_the_others(self):
        a, b, c = self.nodes
        self.start_cluster()
        sim = self.sim()
        wid = self.add_worker(a, sim)
        for n in self.nodes:
            self.wait_routable(n, sim.url)
        sim.configure(stall_ms=2500)
        done, result = self.chat_in_background(a)
        wait_until(lambda: self.worker(b, sim.url)["load"] == 1, 3,
                   what="node-a's request in node-b's /workers load")
        view = get(b.url + "/admin/workers").json()
        w = next(w for w in view["workers"] if w["id"] == wid)
        self.assertEqual(w["load_by_node"], {"node-b": 0, "node-a": 1, "node-c": 0})
        self.assertEqual(w["load_total"], 1)
        self.assertEqual(self.worker(c, sim.url)["load"], 1)
        self.assertTrue(done.wait(10))
        self.assertEqual(result["response"].status, 200)
        wait_until(lambda: self.worker(b, sim.url)["load"] == 0, 3, what="load back to 0")

    def cluster_with_two_sims_on(self, node):
        """The cluster up, two simulators registered on `node` and routable on every node."""
        self.start_cluster()
        sims = [self.sim(), self.sim()]
        for sim in sims:
            self.add_worker(node, sim)
            for n in self.nodes:
                self.wait_routable(n, sim.url)
        return sims

    def test_a_response_created_through_one_node_is_read_through_the_others(self):
        a, b, c = self.nodes
        sims = self.cluster_with_two_sims_on(a)
        created = []
        for i in range(2):  # round robin: one on each worker
            r = post(a.url + "/v1/responses",
                     {"model": "sim-model", "input": f"story {i}", "max_output_tokens": 3})
            self.assertEqual(r.status, 200, r)
            created.append(r.json())
        for node in (b, c):
            for resp in created:
                for _ in range(2):  # round robin alone would hit the wrong worker half the time
                    r = get(node.url + f"/v1/responses/{resp['id']}")
                    self.assertEqual(r.status, 200, (node.name, r))
                    self.assertEqual(r.json()["output"], resp["output"])

    def test_a_response_followed_up_through_other_nodes_goes_to_its_worker_unsearched(self):
        # The Responses affinity is shared: node-b and node-c learn from node-a which worker
        # stores each response, so a follow-up naming it goes there without a
        # `GET /v1/responses/{id}` search of the workers.
        a, b, c = self.nodes
        sims = self.cluster_with_two_sims_on(a)
        created = create_responses(self, a, sims, 2)  # round robin: one on each worker
        self.assertEqual(len(set(created.values())), 2)  # one on each simulator
        for n in (b, c):
            wait_until(lambda: cluster_actor(n)["response_affinity"]["ids_received"] >= 2, 5,
                       what=f"{n.name} to take node-a's response ids")
        self.assertGreaterEqual(cluster_actor(a)["response_affinity"]["ids_sent"], 2)
        for s in sims:
            s.clear()
        for n in (b, c):
            for rid in created:
                for _ in range(2):  # round robin alone would hit the wrong worker half the time
                    r = post(n.url + "/v1/responses",
                             {"model": "sim-model", "input": "and then?",
                              "previous_response_id": rid, "max_output_tokens": 3})
                    self.assertEqual(r.status, 200, (n.name, r))
        for s in sims:
            got = s.requests()
            self.assertEqual(response_probes(got), [], s.url)
            follow_ups = previous_response_ids(got)
            mine = [rid for rid, owner in created.items() if owner is s]
            self.assertEqual(follow_ups, mine * 2 + mine * 2, s.url)  # via node-b, then node-c

    def test_killed_node_is_down_and_its_load_dropped(self):
        a, b, c = self.nodes
        self.start_cluster()
        sim = self.sim()
        self.add_worker(a, sim)
        for n in self.nodes:
            self.wait_routable(n, sim.url)
        sim.configure(stall_ms=10000)
        self.chat_in_background(c)
        wait_until(lambda: self.worker(b, sim.url)["load"] == 1, 3, what="node-c's load on b")

        start = time.monotonic()
        c.gw.kill()
        wait_until(lambda: self.member(b, "node-c")["state"] == "down", HUNG_BOUND,
                   interval=0.01, what="node-c down on node-b")
        took = time.monotonic() - start
        print(f"\nSIGKILLed node declared down after {ms(took)}")
        self.assertEqual(self.worker(b, sim.url)["load"], 0)
        wait_until(lambda: self.member(a, "node-c")["state"] == "down", 1, what="down on a")
        counts = self.cluster(a)["counts"]
        self.assertEqual(counts, {"up": 2, "suspect": 0, "down": 1})
        # The worker node-c had in flight stays registered: workers are the cluster's.
        self.assertIsNotNone(self.worker(a, sim.url))

    def test_hung_node_is_detected_and_comes_back(self):
        a, b, c = self.nodes
        self.start_cluster()
        start = time.monotonic()
        os.kill(c.gw.proc.pid, signal.SIGSTOP)
        states = set()

        def down():
            m = self.member(a, "node-c")
            states.add(m["state"])
            return m["state"] == "down"
        wait_until(down, HUNG_BOUND + 1, interval=0.02, what="the hung node down on node-a")
        took = time.monotonic() - start
        print(f"\nSIGSTOPped node declared down after {ms(took)} (states seen: {sorted(states)})")
        self.assertLess(took, HUNG_BOUND)
        self.assertGreaterEqual(took, TIMEOUT * 0.5)  # silence, not a closed connection

        os.kill(c.gw.proc.pid, signal.SIGCONT)
        wait_until(lambda: self.member(a, "node-c")["state"] == "up", 10, what="node-c back")
        wait_until(lambda: self.cluster(c)["counts"]["up"] == 3, 10, what="node-c sees all")

    def test_restarted_node_rejoins_and_keeps_its_workers(self):
        a, b, c = self.nodes
        self.start_cluster(state=True)
        sim = self.sim()
        wid = self.add_worker(a, sim)
        wait_until(lambda: self.worker(c, sim.url), PROPAGATION_BOUND, what="worker on c")
        wait_until(lambda: os.path.exists(self.state_file(c)), 3, what="node-c's state file")
        time.sleep(0.3)  # the file is written 200 ms after the last change: let it settle
        c.gw.kill()
        wait_until(lambda: self.member(a, "node-c")["state"] == "down", HUNG_BOUND, what="down")

        # The state file alone brings the worker back (a node with no peers to learn from).
        alone = Node("node-c")
        alone.port = free_port()
        alone_gw = self.gateway("--node-name", "node-c", "--state-file", self.state_file(c),
                                port=alone.port)
        w = self.worker(alone, sim.url)
        self.assertIsNotNone(w, "restored from the state file")
        self.assertEqual(w["id"], wid)
        begin = time.monotonic()
        self.assertEqual(alone_gw.stop(), 0)
        self.assertLess(time.monotonic() - begin, 3)

        # Meanwhile the cluster moved on: one more worker, registered on node-b.
        sim2 = self.sim()
        self.add_worker(b, sim2)

        # Restarted in place, it rejoins: peers see a new incarnation, it learns what it missed.
        before = self.member(a, "node-c")["incarnation"]
        self.start_node(c, state=True)
        self.assertIsNotNone(self.worker(c, sim.url))
        wait_until(lambda: self.member(a, "node-c")["state"] == "up", 10, what="rejoined")
        self.assertNotEqual(self.member(a, "node-c")["incarnation"], before)
        wait_until(lambda: self.worker(c, sim2.url), 5, what="the missed registration")
        self.wait_routable(c, sim.url)
        self.assertEqual(post(c.url + "/v1/chat/completions", CHAT).status, 200)

    def test_sigterm_leaves_the_cluster_cleanly(self):
        a, b, c = self.nodes
        self.start_cluster()
        begin = time.monotonic()
        self.assertEqual(c.gw.stop(), 0)
        took = time.monotonic() - begin
        self.assertLess(took, 3)
        m = self.member(a, "node-c")
        self.assertEqual(m["state"], "down")
        self.assertEqual(m["reason"], "left the cluster")


if __name__ == "__main__":
    unittest.main()
