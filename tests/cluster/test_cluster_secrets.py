"""Secrets in a cluster: workers' api keys travel only over mutually authenticated TLS links.

A plain cluster (loopback, or --cluster-insecure) does not replicate keys: a stand-in peer
(cluster_probe) reads the bytes a node sends it and finds no key, only the mark that one was
left out; the other node serves the worker with the key it was given itself, or says in
/admin/workers that it lacks one. Over TLS the keys do travel. Keys, and a key's passphrase,
never show in logs, admin views or metrics.
"""

import os
import sys
import unittest

from cluster_support import (CertsTestCase, Node, cluster_actor, cluster_flags, members_up, probe,
                             start_with_encrypted_key)
from harness import get, post, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from provider_stub import ProviderStub  # noqa: E402

FLAG_KEY = "sk-flag-SECRET-0a1b2c"
POSTED_KEY = "sk-posted-SECRET-3d4e5f"
B_KEY = "sk-node-b-SECRET-6a7b8c"
SECRETS = (FLAG_KEY, POSTED_KEY, B_KEY)


class SecretsTest(CertsTestCase):
    def setUp(self):
        super().setUp()
        self.stubs = []

    def tearDown(self):
        for s in self.stubs:
            s.stop()
        super().tearDown()

    def stub(self, key):
        s = ProviderStub(models=("gpt-stub",), require_key=key)
        self.stubs.append(s)
        return s

    def start_node(self, node, peers=(), tls=False, extra=()):
        flags = cluster_flags(node, peers, extra)
        if tls:
            flags += self.certs.flags(node.name)
        node.gw = self.gateway(*flags, port=node.port)
        return node.gw

    def provider_node(self, node, peers, tls):
        """`node` with one provider by flag (its key by flag) and one registered with a key."""
        self.flagged = self.stub(FLAG_KEY)
        self.posted = self.stub(POSTED_KEY)
        self.start_node(node, peers, tls, ["--openai-urls", self.flagged.url, "--openai-api-key",
                                      FLAG_KEY])
        r = post(node.url + "/workers",
                 {"url": self.posted.url, "provider": "openai", "api_key": POSTED_KEY})
        self.assertEqual(r.status, 202, r)
        return r.json()["id"]

    def workers_view(self, node):
        return {w["url"]: w for w in get(node.url + "/admin/workers").json()["workers"]}

    def assert_no_secret(self, text, where):
        for s in SECRETS + (self.certs.passphrase,):
            self.assertNotIn(s, text, where)
            self.assertNotIn(s.encode().hex(), text, where + " (hex)")

    def test_a_plain_link_carries_no_api_key(self):
        a = Node("node-a")
        self.provider_node(a, (), tls=False)
        # A peer that publishes its own port, so that node-a dials it back and takes it as a
        # member, then reads everything node-a sends it.
        code, ev = probe("--connect", a.cluster_address, "--publish", "--hello", "--name",
                         "probe", "--listen", "2")
        self.assertEqual(code, 0, ev)
        syncs = [e for e in ev if e.get("kind") == "sync"]
        self.assertTrue(syncs, ev)
        records = {r["url"]: r for e in syncs for r in e["records"]}
        for url in (self.flagged.url, self.posted.url):
            self.assertEqual(records[url]["key"], "", url)
            self.assertTrue(records[url]["key_withheld"], url)
        for e in ev:
            self.assert_no_secret(e.get("raw_hex", ""), "the bytes node-a sent")
        self.assertGreaterEqual(cluster_actor(a)["keys_withheld"], 2)

    def test_over_tls_the_keys_travel(self):
        a = Node("node-a")
        self.provider_node(a, (), tls=True)
        code, ev = probe("--connect", a.cluster_address, "--publish", "--hello", "--name",
                         "probe", "--tls-cert", self.certs.cert("probe"), "--tls-key",
                         self.certs.key("probe"), "--tls-ca", self.certs.ca(), "--listen", "2")
        self.assertEqual(code, 0, ev)
        records = {r["url"]: r for e in ev if e.get("kind") == "sync" for r in e["records"]}
        self.assertEqual(records[self.flagged.url]["key"], FLAG_KEY)
        self.assertEqual(records[self.posted.url]["key"], POSTED_KEY)
        self.assertFalse(records[self.posted.url]["key_withheld"])

    def test_a_plain_peer_serves_with_its_own_keys_and_says_which_it_lacks(self):
        a, b = Node("node-a"), Node("node-b")
        posted_id = self.provider_node(a, [b], tls=False)
        # node-b was given the flag provider's key itself, not the posted one.
        self.start_node(b, [a], extra=["--openai-urls", self.flagged.url, "--openai-api-key",
                                  FLAG_KEY])
        for n in (a, b):
            wait_until(lambda: members_up(n) == ["node-a", "node-b"], 10, what="linked")
        wait_until(lambda: self.posted.url in self.workers_view(b), 5, what="replicated")
        view = self.workers_view(b)
        self.assertFalse(view[self.flagged.url]["api_key_missing"])
        self.assertTrue(view[self.posted.url]["api_key_missing"])
        lacking = get(b.url + "/admin/workers").json()["workers_lacking_key"]
        self.assertEqual(lacking, [posted_id])
        self.assertIn("has an api key this node was not given", b.gw.output())
        # What node-b sends that provider: no key (node-a always sends the one it holds).
        wait_until(lambda: any(r["path"] == "/v1/models" for r in self.posted.requests(False)
                               if r["headers"].get("authorization") is None), 10,
                   what="node-b asking the posted provider without a key")

        # Registering it again on node-b, with the key, supplies the key there.
        r = post(b.url + "/workers",
                 {"url": self.posted.url, "provider": "openai", "api_key": B_KEY})
        self.assertEqual(r.status, 202, r)
        self.assertEqual(r.json()["id"], posted_id)
        self.assertFalse(self.workers_view(b)[self.posted.url]["api_key_missing"])
        self.assertEqual(get(b.url + "/admin/workers").json()["workers_lacking_key"], [])
        wait_until(lambda: f"Bearer {B_KEY}" in self.posted.all_headers(), 10,
                   what="node-b using its own key")
        # node-a still uses the key it was given; node-b's never went to it.
        self.assertFalse(self.workers_view(a)[self.posted.url]["api_key_missing"])
        for n in (a, b):
            self.assert_no_secret(n.gw.output(), f"{n.name}'s log")
            self.assert_no_secret(get(n.url + "/admin/workers").text, f"{n.name} /admin/workers")

    def test_keys_never_show_in_logs_admin_views_or_metrics(self):
        a, b = Node("node-a"), Node("node-b")
        self.provider_node(a, [b], tls=True)
        start_with_encrypted_key(self, b, [a], self.certs)
        for n in (a, b):
            wait_until(lambda: members_up(n) == ["node-a", "node-b"], 10, what="linked")
        wait_until(lambda: self.posted.url in self.workers_view(b), 5, what="replicated")
        wait_until(lambda: all(w["routable"] for w in get(b.url + "/workers").json()["workers"]),
                   10, what="the providers routable on node-b (their keys arrived)")
        chat = {"model": "gpt-stub", "messages": [{"role": "user", "content": "hi"}]}
        for n in (a, b):
            for _ in range(2):
                self.assertEqual(post(n.url + "/v1/chat/completions", chat).status, 200)
        for n in (a, b):
            paths = ["/workers", "/admin/workers", "/admin/cluster", "/admin/actors",
                     "/admin/requests", "/v1/models"]
            for w in get(n.url + "/workers").json()["workers"]:
                paths.append("/workers/" + w["id"])
            for actor in get(n.url + "/admin/actors").json()["actors"]:
                paths.append(f"/admin/actors/{actor['id']}")
            for p in paths:
                self.assert_no_secret(get(n.url + p).text, f"{n.name} {p}")
            self.assert_no_secret(get(f"http://127.0.0.1:{n.gw.metrics_port}/metrics").text,
                                  f"{n.name} /metrics")
        for n in (a, b):
            # Per-request log lines are buffered until a flush or exit: every line is in the
            # output once the node stopped.
            n.gw.stop()
            self.assertIn("troupe stopped", n.gw.output())
            self.assert_no_secret(n.gw.output(), f"{n.name}'s log (debug level)")
        # The keys were really in use: each provider saw its own.
        self.assertIn(f"Bearer {FLAG_KEY}", self.flagged.all_headers())
        self.assertIn(f"Bearer {POSTED_KEY}", self.posted.all_headers())


if __name__ == "__main__":
    unittest.main()
