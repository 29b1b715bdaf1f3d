"""A node that was away converges again: SIGSTOPped long enough to be declared down (its peers
drop their links to it), then continued, every node sees every other up again, and
registrations and load flow both ways within a bound, plain and with mutual TLS.

The stuck state this guards against (found by bench/cluster_gossip.py at 20 nodes): one side of a
pair dropped its link while the other kept its own; the side that dropped it refused every
message of the other as "before its hello on this link", and the other, whose link never broke,
never greeted again.
"""

import os
import signal
import threading
import time
import unittest

from cluster_support import CertsTestCase, Node, cluster_actor, cluster_flags, members_up
from harness import delete, get, post, wait_until

CHAT = {"model": "sim-model", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}
NAMES = ("node-a", "node-b", "node-c")
# Longer than the cluster timeout (1.5 s) plus a heartbeat: the others declare the node down.
STALL = 3.0
# From SIGCONT to a cluster that works again everywhere: a redial's backoff (up to 5 s) and the
# passive side's wait for the pair's dialer (backoff + connect timeout, 8 s) at most, with
# margin for a loaded machine.
CONVERGE_BOUND = 20.0


class RejoinTest(CertsTestCase):
    def tearDown(self):
        for n in getattr(self, "nodes", []):
            if n.gw and n.gw.alive():
                os.kill(n.gw.proc.pid, signal.SIGCONT)
        super().tearDown()

    def start_cluster(self, tls, seed_host="127.0.0.1"):
        self.nodes = [Node(n) for n in NAMES]
        for n in self.nodes:
            flags = cluster_flags(n)
            flags += ["--cluster-peers", ",".join(f"{seed_host}:{p.cluster_port}"
                                                  for p in self.nodes if p is not n)]
            if tls:
                flags += self.certs.flags(n.name)
            n.gw = self.gateway(*flags, port=n.port)
        self.wait_all_up(10, "the cluster to form")

    def wait_all_up(self, timeout, what):
        for n in self.nodes:
            wait_until(lambda: members_up(n) == list(NAMES), timeout,
                       what=f"{n.name} to see every member up ({what})")

    def workers(self, node):
        return get(node.url + "/admin/workers", timeout=2).json()["workers"]

    def worker(self, node, url):
        return next((w for w in self.workers(node) if w["url"] == url), None)

    def register(self, node, url):
        r = post(node.url + "/workers", {"url": url})
        self.assertEqual(r.status, 202, r)
        return r.json()["id"]

    def chat_in_background(self, node):
        result = {}

        def run():
            try:
                result["response"] = post(node.url + "/v1/chat/completions", CHAT, timeout=30)
            except OSError as e:
                result["error"] = e

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t, result

    def assert_flows_both_ways(self, away, bound):
        """A registration on `away` reaches the others and one on another node reaches `away`;
        a request held through each side shows as that node's load on the other; a removal
        through the other side reaches everyone."""
        other = next(n for n in self.nodes if n is not away)
        for origin, target in ((away, other), (other, away)):
            sim = self.sim()
            wid = self.register(origin, sim.url)
            for n in self.nodes:
                wait_until(lambda: self.worker(n, sim.url) is not None, bound,
                           what=f"{origin.name}'s registration on {n.name}")
            wait_until(lambda: (self.worker(origin, sim.url) or {}).get("routable"), bound,
                       what=f"the worker routable on {origin.name}")
            sim.configure(stall_ms=2000)
            t, result = self.chat_in_background(origin)
            wait_until(lambda: self.worker(target, sim.url)["load_by_node"].get(origin.name) == 1,
                       bound, what=f"{origin.name}'s load on {target.name}")
            t.join(20)
            self.assertEqual(result.get("response") and result["response"].status, 200, result)
            wait_until(lambda: self.worker(target, sim.url)["load_by_node"].get(origin.name) == 0,
                       bound, what=f"{origin.name}'s load back to 0 on {target.name}")
            # Removed from target, gone everywhere (the next request goes to the next worker).
            self.assertEqual(delete(target.url + f"/workers/{wid}").status, 200)
            for n in self.nodes:
                wait_until(lambda: self.worker(n, sim.url) is None, bound,
                           what=f"the removal on {n.name}")

    def stall_and_rejoin(self, tls, seed_host="127.0.0.1", rounds=2):
        self.start_cluster(tls, seed_host)
        # Two of the three: between them each node both dials and waits for a peer (of a pair,
        # the one whose address sorts first dials), so both sides of a pair are stopped.
        for away in self.nodes[:rounds]:
            peers = [n for n in self.nodes if n is not away]
            os.kill(away.gw.proc.pid, signal.SIGSTOP)
            for n in peers:
                wait_until(lambda: next(m for m in get(n.url + "/admin/cluster").json()["members"]
                                        if m["name"] == away.name)["state"] == "down",
                           STALL + 5, what=f"{away.name} down on {n.name}")
            time.sleep(max(0.0, STALL - 1.5))  # stays away a while after it is down
            os.kill(away.gw.proc.pid, signal.SIGCONT)
            start = time.monotonic()
            self.wait_all_up(CONVERGE_BOUND, f"after {away.name} came back")
            took = time.monotonic() - start
            self.assert_flows_both_ways(away, CONVERGE_BOUND)
            refused = {n.name: cluster_actor(n)["refused"].get("not_member", 0)
                       for n in self.nodes}
            print(f"\n{'TLS' if tls else 'plain'}: {away.name} away {STALL} s: every member up "
                  f"everywhere {took * 1000:.0f} ms after SIGCONT; not_member refusals so far "
                  f"{refused}")

    def test_a_node_stopped_past_the_timeout_converges_again_plain(self):
        self.stall_and_rejoin(tls=False)

    def test_a_node_stopped_past_the_timeout_converges_again_tls(self):
        self.stall_and_rejoin(tls=True)

    def test_two_connections_per_pair_and_a_stop_converge_again(self):
        # Seeds spelled "localhost" while nodes announce 127.0.0.1: both nodes of each pair
        # dial (neither knows the other's address as the other says it), two connections.
        self.stall_and_rejoin(tls=False, seed_host="localhost", rounds=1)


if __name__ == "__main__":
    unittest.main()
