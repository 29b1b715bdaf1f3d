"""cache_aware and consistent_hash end to end: which simulator received which request.

cache_aware: conversations that share a long prefix stay on the worker that first saw them,
for chat, Anthropic messages (the system text counts) and a prefill/decode pair's prefill half.
consistent_hash: a routing key pins its requests to one worker. The /admin/actors policy summary
shows the trees and the ring. (Placement rules: docs/policies.md.)
"""

import unittest

from harness import (ProcessTestCase, assert_each_refused, delete, free_port, get, post,
                     wait_until)

MODEL = "sim-model"

# Two system prompts of ~2000 characters that differ from their first word on.
SYSTEM = {
    "A": "Astronomy tutor. " + " ".join(f"star-{i}" for i in range(280)),
    "B": "Botany tutor. " + " ".join(f"leaf-{i}" for i in range(280)),
}


def chat(family, question):
    return {"model": MODEL, "max_tokens": 2,
            "messages": [{"role": "system", "content": SYSTEM[family]},
                         {"role": "user", "content": question}]}


def families(sim, path, system_of):
    """The system-prompt families among the `path` requests `sim` received."""
    return [system_of(r["json"]) for r in sim.requests() if r["path"] == path]


def family_of(text):
    return next(k for k, v in SYSTEM.items() if v in text)


def policy_summary(gw, role="regular"):
    """The policy's line of /admin/actors: its scalars, the strategy's flattened one level."""
    actors = get(gw.url + "/admin/actors").json()["actors"]
    return next(a for a in actors if a["name"] == f"policy:{role}")["summary"]


def wait_all_routable(gw, n):
    """Placement tests need every worker to be a candidate from the first request on."""
    wait_until(lambda: sum(w["routable"] for w in gw.workers()) == n, 10,
               what=f"{n} workers routable")


def tree_bytes(summary):
    """{worker id: bytes of prompt text remembered for it}."""
    prefix = "tree_bytes."
    return {k[len(prefix):]: v for k, v in summary.items() if k.startswith(prefix)}


class CacheAwareTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.sims = [self.sim(), self.sim()]
        self.gw = self.gateway("--policy", "cache_aware", workers=self.sims)
        wait_all_routable(self.gw, 2)

    def assert_one_worker_per_family(self, path, system_of, sent):
        got = [families(s, path, system_of) for s in self.sims]
        self.assertEqual(sorted(f for fs in got for f in fs), sorted(sent))
        # Each simulator saw one family only, and the two families went to different ones.
        self.assertEqual(sorted(set(fs) for fs in got), [{"A"}, {"B"}], got)

    def test_chat_conversations_sharing_a_prefix_stay_on_one_worker(self):
        sent = []
        for i in range(6):
            for fam in ("A", "B"):
                r = post(self.gw.url + "/v1/chat/completions", chat(fam, f"question {i}?"))
                self.assertEqual(r.status, 200, r)
                sent.append(fam)
        self.assert_one_worker_per_family(
            "/v1/chat/completions", lambda j: family_of(j["messages"][0]["content"]), sent)
        summary = policy_summary(self.gw)
        self.assertEqual(summary["strategy"], "cache_aware")
        self.assertEqual((summary["picks.cache_hit"], summary["picks.most_room"]), (10, 2))
        trees = tree_bytes(summary)
        self.assertEqual(sorted(trees), sorted(w["id"] for w in self.gw.workers()))
        for size in trees.values():
            self.assertGreater(size, len(SYSTEM["A"]))

    def test_anthropic_system_text_is_part_of_the_prompt(self):
        # The messages differ from their first byte: only `system` makes them one conversation.
        sent = []
        for i in range(4):
            for fam in ("A", "B"):
                body = {"model": MODEL, "max_tokens": 2, "system": SYSTEM[fam],
                        "messages": [{"role": "user", "content": f"{i} what now?"}]}
                r = post(self.gw.url + "/v1/messages", body)
                self.assertEqual(r.status, 200, r)
                sent.append(fam)
        self.assert_one_worker_per_family("/v1/messages", lambda j: family_of(j["system"]), sent)

    def test_a_worker_removed_loses_its_tree(self):
        r = post(self.gw.url + "/v1/chat/completions", chat("A", "hi"))
        self.assertEqual(r.status, 200, r)
        trees = tree_bytes(policy_summary(self.gw))
        victim = max(trees, key=trees.get)  # the worker that holds the conversation
        self.assertGreater(trees[victim], len(SYSTEM["A"]))
        r = delete(self.gw.url + f"/workers/{victim}")
        self.assertIn(r.status, (200, 202), r)
        wait_until(lambda: victim not in tree_bytes(policy_summary(self.gw)), 5,
                   what="the removed worker's tree dropped")
        self.assertEqual(policy_summary(self.gw)["tree_nodes"], 0)


class CacheAwarePrefillTest(ProcessTestCase):
    def test_prefill_policy_keeps_a_prefix_on_one_prefill_worker(self):
        ports = [free_port(), free_port()]
        prefills = [self.sim(role="prefill", bootstrap_port=p) for p in ports]
        decode = self.sim(role="decode")
        flags = ["--pd-disaggregation", "--prefill-policy", "cache_aware",
                 "--decode-policy", "round_robin", "--request-timeout-secs", "10"]
        for sim, port in zip(prefills, ports):
            flags += ["--prefill", sim.url, str(port)]
        gw = self.gateway(*flags, "--decode", decode.url)
        wait_all_routable(gw, 3)
        sent = []
        for i in range(4):
            for fam in ("A", "B"):
                r = post(gw.url + "/generate", {"text": SYSTEM[fam] + f" question {i}",
                                                "sampling_params": {"max_new_tokens": 2}})
                self.assertEqual(r.status, 200, r)
                sent.append(fam)
        got = [families(s, "/generate", lambda j: family_of(j["text"])) for s in prefills]
        self.assertEqual(sorted(f for fs in got for f in fs), sorted(sent))
        self.assertEqual(sorted(set(fs) for fs in got), [{"A"}, {"B"}], got)
        self.assertEqual(policy_summary(gw, "prefill")["strategy"], "cache_aware")
        self.assertEqual(policy_summary(gw, "decode")["strategy"], "round_robin")


class ConsistentHashTest(ProcessTestCase):
    def test_a_routing_key_pins_its_requests_to_one_worker(self):
        sims = [self.sim(), self.sim(), self.sim()]
        gw = self.gateway("--policy", "consistent_hash", workers=sims)
        wait_all_routable(gw, 3)
        keys = [f"user-{i}" for i in range(16)]
        for rnd in range(3):
            for k in keys:
                # smg's header and ours name the same key.
                header = "x-smg-routing-key" if rnd % 2 == 0 else "x-routing-key"
                r = post(gw.url + "/v1/completions",
                         {"model": MODEL, "prompt": "hi", "max_tokens": 1}, headers={header: k})
                self.assertEqual(r.status, 200, r)
        # smg's header wins over ours when both are given.
        r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 1},
                 headers={"x-smg-routing-key": keys[0], "x-routing-key": "someone-else"})
        self.assertEqual(r.status, 200, r)

        def key_of(req):
            h = req["headers"]
            return h.get("x-smg-routing-key") or h.get("x-routing-key")

        where = {}
        for idx, sim in enumerate(sims):
            for req in sim.requests():
                if req["path"] == "/v1/completions":
                    where.setdefault(key_of(req), set()).add(idx)
        self.assertEqual(sorted(where), sorted(keys))
        for k, owners in where.items():
            self.assertEqual(len(owners), 1, f"{k} went to simulators {owners}")
        self.assertGreater(len({next(iter(o)) for o in where.values()}), 1, "keys spread")
        summary = policy_summary(gw)
        self.assertEqual((summary["ring_workers"], summary["ring_points"]), (3, 480))
        self.assertEqual(summary["picks.routing_key"], 3 * len(keys) + 1)


def completions(gw, key=None, prompt="hi"):
    headers = {"x-smg-routing-key": key} if key else {}
    r = post(gw.url + "/v1/completions", {"model": MODEL, "prompt": prompt, "max_tokens": 1},
             headers=headers)
    assert r.status == 200, r
    return r


def owners(sims, field):
    """{value of `field` of a /v1/completions request: simulators that received it}."""
    where = {}
    for idx, sim in enumerate(sims):
        for req in sim.requests():
            if req["path"] == "/v1/completions":
                where.setdefault(field(req), set()).add(idx)
    return where


class SmgPoliciesTest(ProcessTestCase):
    """manual, prefix_hash, least_load and bucket behind a real gateway."""

    def fleet(self, *flags, n=3):
        sims = [self.sim() for _ in range(n)]
        gw = self.gateway(*flags, workers=sims)
        wait_all_routable(gw, n)
        return sims, gw

    def test_manual_keeps_each_routing_key_on_one_worker(self):
        sims, gw = self.fleet("--policy", "manual", "--assignment-mode", "min_group")
        keys = [f"session-{i}" for i in range(12)]
        for _ in range(3):
            for k in keys:
                completions(gw, k)
        where = owners(sims, lambda r: r["headers"].get("x-smg-routing-key"))
        self.assertEqual(sorted(where), sorted(keys))
        for k, o in where.items():
            self.assertEqual(len(o), 1, f"{k} went to {o}")
        # min_group: 12 keys over 3 workers, 4 each.
        counts = [sum(1 for o in where.values() if o == {i}) for i in range(3)]
        self.assertEqual(counts, [4, 4, 4])
        summary = policy_summary(gw)
        self.assertEqual((summary["strategy"], summary["routing_keys"], summary["picks.sticky"]),
                         ("manual", 12, 24))

    def test_prefix_hash_keeps_a_prompt_head_on_one_worker(self):
        sims, gw = self.fleet("--policy", "prefix_hash", "--prefix-token-count", "64")
        heads = [f"system {i} " + "x" * 400 for i in range(12)]
        for h in heads:
            for q in ("first", "second", "third"):
                completions(gw, prompt=h + q)
        where = owners(sims, lambda r: r["json"]["prompt"][:256])
        self.assertEqual(len(where), 12)
        for head, o in where.items():
            self.assertEqual(len(o), 1, f"one head went to {o}")
        self.assertGreater(len({next(iter(o)) for o in where.values()}), 1, "heads spread")
        self.assertEqual(policy_summary(gw)["picks.ring_hit"], 36)

    def test_least_load_and_bucket_start_and_route(self):
        sims, gw = self.fleet("--policy", "least_load", "--least-load-max-waiting-requests",
                              "4", n=2)
        for _ in range(6):
            completions(gw)
        self.assertEqual(policy_summary(gw)["max_waiting_requests"], 4)
        self.assertEqual(sum(len(s.requests()) > 0 for s in sims), 2)
        sims, gw = self.fleet("--policy", "bucket", n=2)
        completions(gw, prompt="short")
        self.assertEqual(policy_summary(gw)["strategy"], "bucket")

    def test_the_target_worker_header_picks_the_worker(self):
        sims, gw = self.fleet("--policy", "round_robin")
        ids = [w["id"] for w in gw.workers()]
        urls = [w["url"] for w in gw.workers()]
        body = {"model": MODEL, "prompt": "hi", "max_tokens": 1}
        for target, idx in ((ids[1], 1), (urls[2], 2), ("0", 0)):
            for _ in range(3):
                r = post(gw.url + "/v1/completions", body,
                         headers={"x-smg-target-worker": target})
                self.assertEqual(r.status, 200, r)
            got = [len([q for q in s.requests() if q["path"] == "/v1/completions"])
                   for s in sims]
            self.assertEqual(got[idx], 3, (target, got))
            for s in sims:
                s.clear()
        r = post(gw.url + "/v1/completions", body, headers={"x-smg-target-worker": "w-nobody"})
        self.assertEqual(r.status, 400, r)
        self.assertIn("names no regular worker", r.json()["error"]["message"])
        self.assertEqual(policy_summary(gw)["targeted"], 9)

    def test_bucket_is_refused_as_the_decode_policy(self):
        pd = ["--pd-disaggregation", "--prefill", "http://127.0.0.1:1",
              "--decode", "http://127.0.0.1:2"]
        assert_each_refused(self, ["--policy", "bucket", *pd], ["--decode-policy", "bucket", *pd],
                            ["--assignment-mode", "sticky"], ["--max-idle-secs", "0"])


class PolicyFlagsTest(ProcessTestCase):
    def test_smg_spellings_and_tuning_flags(self):
        sim = self.sim()
        gw = self.gateway("--policy", "consistent_hashing", "--prefill-policy", "cache_aware",
                          "--cache-threshold", "0.5", "--balance-abs-threshold", "8",
                          "--balance-rel-threshold", "2", "--max-tree-size", "4096",
                          "--eviction-interval", "60", workers=[sim])
        self.assertEqual(policy_summary(gw)["strategy"], "consistent_hash")
        state = policy_summary(gw, "prefill")
        self.assertEqual((state["cache_threshold"], state["balance_abs_threshold"],
                          state["balance_rel_threshold"], state["max_tree_size"],
                          state["eviction_interval_secs"]), (0.5, 8, 2.0, 4096, 60))

    def test_bad_values_stop_start_up(self):
        assert_each_refused(self, ["--policy", "cache_awareness"], ["--cache-threshold", "1.5"],
                            ["--max-tree-size", "0"])


if __name__ == "__main__":
    unittest.main()
