"""A node that joins late (docs/cluster.md, "A node that joins late"), real troupe and troupe-sim
processes on loopback: node-a serves two simulators alone, creates Responses objects and routes
chats with shared system prompts; node-b starts only then and links to it. node-a's snapshot
tells node-b where each response is stored and where each prompt went, so a follow-up through
node-b goes to the worker storing its response without any `GET /v1/responses/{id}` search of
the workers, and a prompt node-a placed goes, through node-b, to the worker that holds it.
"""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from cluster_support import (Node, cluster_actor, cluster_flags, create_responses,  # noqa: E402
                             metric, previous_response_ids, response_probes)
from harness import ProcessTestCase, get, post, wait_until  # noqa: E402

MODEL = "sim-model"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


def system_prompts(n, seed=11):
    rng = random.Random(seed)
    return [f"app {i}: " + " ".join(rng.choice(WORDS) for _ in range(250)) for i in range(n)]


def chat(system):
    return {"model": MODEL, "max_tokens": 2,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "hello"}]}


def system_of(request):
    msgs = (request.get("json") or {}).get("messages") or []
    return msgs[0]["content"] if msgs else None


class LateJoinTest(ProcessTestCase):
    def routable(self, node, count):
        wait_until(lambda: sum(1 for w in get(node.url + "/workers").json()["workers"]
                               if w.get("routable")) == count, 15,
                   what=f"{count} workers routable on {node.name}")

    def test_a_node_joining_late_is_told_responses_and_placements_made_before(self):
        a, b = Node("node-a"), Node("node-b")
        if b.cluster_address > a.cluster_address:
            # node-b dials (of a pair, the lower cluster address does): at once, at its start.
            a.cluster_port, b.cluster_port = b.cluster_port, a.cluster_port
        sims = [self.sim(), self.sim()]
        a.gw = self.gateway(*cluster_flags(a, [], ["--policy", "cache_aware"]), workers=sims,
                            port=a.port)
        self.routable(a, 2)

        # node-a alone: responses created, prompts placed (nobody to tell yet).
        created = create_responses(self, a, sims, 8, MODEL)  # response id -> its simulator
        prompts = system_prompts(6)
        placed = {}  # system prompt -> the simulator it went to
        for p in prompts:
            r = post(a.url + "/v1/chat/completions", chat(p), timeout=30)
            self.assertEqual(r.status, 200, r)
            placed[p] = [s for s in sims if any(system_of(q) == p for q in s.requests())][0]
        self.assertEqual(len(set(placed.values())), 2, "the prompts spread over both workers")

        # node-b joins: it learns the workers from node-a's registry, then the snapshot.
        b.gw = self.gateway(*cluster_flags(b, [a], ["--policy", "cache_aware"]), port=b.port)
        wait_until(lambda: cluster_actor(b)["join_snapshots"]["response_ids_received"]
                   >= len(created), 15, what="node-b to take node-a's snapshot of response ids")
        wait_until(lambda: cluster_actor(b)["join_snapshots"]["prefix_blocks_received"] > 0, 5,
                   what="node-b to take node-a's snapshot of placements")
        self.routable(b, 2)
        told = cluster_actor(a)["join_snapshots"]
        print(f"\nnode-a's snapshot for node-b: {told['response_ids_sent']} response ids, "
              f"{told['prefix_blocks_sent']} prefix blocks, {told['messages_sent']} messages, "
              f"{told['bytes_sent']} bytes (registry in sync: {told['sent_unsynced'] == 0})")
        self.assertEqual(told["snapshots_sent"], 1)
        self.assertEqual(told["response_ids_sent"], len(created))
        self.assertGreaterEqual(metric(a, "troupe_cluster_response_ids_total",
                                       'outcome="snapshot_sent"'), len(created))
        self.assertGreater(metric(b, "troupe_cluster_prefix_hashes_total",
                                  'outcome="snapshot_received"'), 0)

        for s in sims:
            s.clear()
        # Follow-ups through node-b: each at its response's worker, no worker searched.
        for rid, owner in created.items():
            r = post(b.url + "/v1/responses",
                     {"model": MODEL, "input": "and then?", "previous_response_id": rid,
                      "max_output_tokens": 3})
            self.assertEqual(r.status, 200, (rid, r))
        # The prompts through node-b, in another order than node-a met them (which, on two
        # empty views, would place them alike by chance): each at the worker holding it.
        for p in reversed(prompts):
            r = post(b.url + "/v1/chat/completions", chat(p), timeout=30)
            self.assertEqual(r.status, 200, r)
        for s in sims:
            got = s.requests()
            self.assertEqual(response_probes(got), [], s.url)
            follow_ups = previous_response_ids(got)
            self.assertEqual(sorted(follow_ups),
                             sorted(rid for rid, owner in created.items() if owner is s), s.url)
            chats = [system_of(q) for q in got if q["path"] == "/v1/chat/completions"]
            self.assertEqual(sorted(chats), sorted(p for p in prompts if placed[p] is s), s.url)


if __name__ == "__main__":
    unittest.main()
