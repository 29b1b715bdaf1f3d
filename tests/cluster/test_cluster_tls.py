"""A cluster across machines: mutual TLS between nodes, and a node that trusts only its peers.

Certificates are made at run time (scripts/cluster-certs.sh): a cluster CA with node
certificates, and a rogue CA. Two TLS nodes link and share a registration; a node with a
certificate from the rogue CA, a node without TLS, a plain CAF client and an authenticated
client that is no member never become members, and what they send changes nothing; a 32-byte
BASP header claiming 4 GiB (plain or inside TLS) costs the node nothing; every bad flag
combination stops start-up with exit code 2 and a message naming the flag.
"""

import os
import subprocess
import time
import unittest

from cluster_support import (BASP_4GIB_HEADER, CertsTestCase, Node, cluster_actor, cluster_flags,
                             dial_failures,
                             cluster_view, members_up, metric, plain_connection, probe,
                             send_and_hold, start_with_encrypted_key, tls_connection, vm_rss_kb,
                             worker_urls)
from harness import TROUPE_BIN, free_port, get, post, wait_until

CHAT = {"model": "sim-model", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}
RSS_BOUND_KB = 50 * 1024  # the bound: VmRSS within +50 MB


class TlsClusterTest(CertsTestCase):
    def start_node(self, node, peers=(), tls=True, rogue=False, extra=()):
        flags = cluster_flags(node, peers, extra)
        if tls:
            flags += self.certs.flags("rogue" if rogue else node.name, rogue)
        node.gw = self.gateway(*flags, port=node.port)
        return node.gw

    def tls_pair(self):
        a, b = Node("node-a"), Node("node-b")
        self.start_node(a, [b])
        self.start_node(b, [a])
        for n in (a, b):
            wait_until(lambda: members_up(n) == ["node-a", "node-b"], 10,
                       what=f"{n.name} linked over TLS")
        return a, b

    def register(self, node, url):
        r = post(node.url + "/workers", {"url": url})
        self.assertEqual(r.status, 202, r)
        return r.json()["id"]

    # -- linking --

    def test_two_tls_nodes_link_and_share_a_registration(self):
        a, b = self.tls_pair()
        for n in (a, b):
            self.assertEqual(cluster_view(n)["transport"], "tls")
            self.assertIn("mutual TLS", n.gw.output())
        sim = self.sim()
        wid = self.register(a, sim.url)
        wait_until(lambda: (wid, sim.url) in worker_urls(b), 5, what="the worker on node-b")
        wait_until(lambda: any(w["routable"] for w in get(b.url + "/workers").json()["workers"]),
                   10, what="routable on node-b")
        self.assertEqual(post(b.url + "/v1/chat/completions", CHAT).status, 200)
        state = cluster_actor(a)
        self.assertEqual(state["transport"], "tls")
        self.assertTrue(state["frame_guard"])
        self.assertEqual(state["refused_total"], 0)

    # -- intruders --

    def test_intruders_never_become_members_and_change_nothing(self):
        a, b = self.tls_pair()
        sim = self.sim()
        wid = self.register(a, sim.url)
        wait_until(lambda: (wid, sim.url) in worker_urls(b), 5, what="the worker on node-b")
        before = {n.name: worker_urls(n) for n in (a, b)}
        evil = self.sim()  # where an intruder would send users' requests

        # A node whose certificate comes from another CA (it even calls itself node-c).
        rogue = Node("node-c")
        self.start_node(rogue, [a, b], rogue=True)
        self.register(rogue, evil.url)
        # A node without TLS (loopback: allowed to start), naming the TLS nodes as seeds.
        bare = Node("node-d")
        self.start_node(bare, [a, b], tls=False)
        self.register(bare, evil.url)

        # A plain CAF client, and one with the rogue CA's certificate: refused at the door.
        code, ev = probe("--connect", a.cluster_address, "--hello", "--sync", f"{wid}={evil.url}")
        self.assertEqual(code, 1, ev)
        self.assertEqual(ev[-1]["event"], "connect_failed")
        code, ev = probe("--connect", a.cluster_address, "--tls-cert",
                         self.certs.cert("rogue", rogue=True), "--tls-key",
                         self.certs.key("rogue", rogue=True), "--tls-ca", self.certs.ca(True),
                         "--hello", "--sync", f"{wid}={evil.url}")
        self.assertEqual(code, 1, ev)
        # A client with a valid certificate that no node dialed: it gets in, yet its messages
        # are refused (not a member), and its hello names an address nobody answers at.
        code, ev = probe("--connect", a.cluster_address, "--tls-cert", self.certs.cert("probe"),
                         "--tls-key", self.certs.key("probe"), "--tls-ca", self.certs.ca(),
                         "--name", "node-b", "--sync", f"{wid}={evil.url}", "--listen", "1")
        self.assertEqual(code, 0, ev)
        self.assertNotIn("received", [e["event"] for e in ev])  # nothing sent to a stranger
        wait_until(lambda: cluster_actor(a)["refused"]["not_member"] >= 1, 5,
                   what="the stranger's sync refused")
        self.assertGreaterEqual(metric(a, "troupe_cluster_refused_total",
                                       'reason="not_member"'), 1)

        # Each intruder tried each seed, and failed, more than once.
        for intruder in (rogue, bare):
            for seed in (a, b):
                wait_until(lambda: dial_failures(intruder, seed.cluster_address) >= 2, 15,
                           what=f"{intruder.name}'s dials of {seed.name} to fail")
        for n in (a, b):
            self.assertEqual(members_up(n), ["node-a", "node-b"], n.name)
            self.assertEqual(worker_urls(n), before[n.name], n.name)
        for intruder in (rogue, bare):
            self.assertEqual(members_up(intruder), [intruder.name])
            self.assertNotIn(sim.url, [u for _, u in worker_urls(intruder)])
        self.assertIn("TLS handshake failed", rogue.gw.output())
        # Users' requests still go where the cluster says.
        wait_until(lambda: any(w["routable"] for w in get(b.url + "/workers").json()["workers"]),
                   10, what="routable on node-b")
        for n in (a, b):
            self.assertEqual(post(n.url + "/v1/chat/completions", CHAT).status, 200)
        self.assertEqual([q for q in evil.requests() if q["path"] == "/v1/chat/completions"], [])

    # -- the 4 GiB header --

    def assert_header_costs_nothing(self, node, connect, label):
        pid = node.gw.proc.pid
        before = vm_rss_kb(pid)
        peak = send_and_hold(connect(), BASP_4GIB_HEADER, 3, pid)
        print(f"\n4 GiB BASP header ({label}): VmRSS {before / 1024:.1f} MB -> peak "
              f"{peak / 1024:.1f} MB over 3 s")
        self.assertLess(peak - before, RSS_BOUND_KB, label)
        self.assertTrue(node.gw.alive())
        self.assertEqual(get(node.url + "/liveness").status, 200)

    def test_a_4gib_header_costs_a_tls_node_nothing(self):
        a, b = self.tls_pair()
        self.assert_header_costs_nothing(a, lambda: plain_connection(a.cluster_port),
                                         "plain TCP to a TLS port")
        # From a client holding a valid certificate: TLS does not stop this one, the frame
        # limit does.
        self.assert_header_costs_nothing(
            a, lambda: tls_connection(a.cluster_port, self.certs.cert("probe"),
                                      self.certs.key("probe"), self.certs.ca()),
            "inside an authenticated TLS session")
        wait_until(lambda: cluster_actor(a)["refused"]["frame_too_large"] >= 1, 3,
                   what="the frame refused and counted")
        self.assertEqual(members_up(a), ["node-a", "node-b"])  # the members' link is unharmed
        self.assertEqual(members_up(b), ["node-a", "node-b"])

    def test_a_4gib_header_costs_a_plain_node_nothing(self):
        a = Node("node-a")
        self.start_node(a, tls=False)
        self.assert_header_costs_nothing(a, lambda: plain_connection(a.cluster_port),
                                         "plain TCP to a plain loopback port")
        wait_until(lambda: metric(a, "troupe_cluster_refused_total",
                                  'reason="frame_too_large"') >= 1, 3, what="counted")

    # -- start-up --

    def refused(self, *flags, env=None):
        """Runs troupe with `flags`; returns (exit code, stderr, seconds taken)."""
        begin = time.monotonic()
        p = subprocess.run([TROUPE_BIN, "--port", str(free_port()), "--prometheus-port", "0",
                            *[str(f) for f in flags]], capture_output=True, text=True,
                           timeout=15, env=env)
        return p.returncode, p.stderr, time.monotonic() - begin

    def test_every_bad_flag_combination_stops_start_up_naming_the_flag(self):
        c = self.certs
        port = ["--cluster-port", str(free_port())]
        directory = c.dir
        cases = [
            ("--cluster-tls-key", ["--cluster-tls-cert", c.cert("node-a")] + port),
            ("--cluster-tls-ca", ["--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                  c.key("node-a")] + port),
            ("--cluster-tls-cert", ["--cluster-tls-ca", c.ca()] + port),
            ("--cluster-tls-cert", ["--cluster-tls-cert", "/nonexistent/a.pem",
                                    "--cluster-tls-key", c.key("node-a"), "--cluster-tls-ca",
                                    c.ca()] + port),
            ("--cluster-tls-key", ["--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                   directory, "--cluster-tls-ca", c.ca()] + port),
            ("--cluster-tls-ca", ["--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                  c.key("node-a"), "--cluster-tls-ca", c.not_pem] + port),
            ("--cluster-tls-cert", ["--cluster-tls-cert", c.not_pem, "--cluster-tls-key",
                                    c.key("node-a"), "--cluster-tls-ca", c.ca()] + port),
            ("--cluster-tls-key", ["--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                   c.key("node-b"), "--cluster-tls-ca", c.ca()] + port),
            ("--cluster-tls-key-passphrase", ["--cluster-tls-cert", c.cert("node-b"),
                                              "--cluster-tls-key", c.encrypted_key,
                                              "--cluster-tls-ca", c.ca()] + port),
            ("--cluster-tls-key-passphrase", ["--cluster-tls-cert", c.cert("node-b"),
                                              "--cluster-tls-key", c.encrypted_key,
                                              "--cluster-tls-key-passphrase",
                                              "wrong-Passphrase-XYZ", "--cluster-tls-ca",
                                              c.ca()] + port),
            ("--cluster-tls-ca", c.flags("rogue", rogue=True)[:4] + ["--cluster-tls-ca", c.ca()]
             + port),
            ("--cluster-tls-ca", ["--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                  c.key("node-a"), "--cluster-tls-ca", c.cert("node-b")] + port),
            ("--cluster-insecure", c.flags("node-a") + ["--cluster-insecure"] + port),
            ("--cluster-tls-cert", c.flags("node-a")),  # no cluster port
            ("--cluster-host", ["--cluster-host", "127.0.0.1"]),
            ("--cluster-insecure", ["--host", "0.0.0.0"] + port),
            ("--cluster-insecure", ["--cluster-host", "0.0.0.0"] + port),
        ]
        if os.geteuid() != 0:  # root reads any file
            unreadable = os.path.join(c.dir, "unreadable.key")
            subprocess.run(["cp", c.key("node-a"), unreadable], check=True)
            os.chmod(unreadable, 0)
            cases.append(("--cluster-tls-key", ["--cluster-tls-cert", c.cert("node-a"),
                                                "--cluster-tls-key", unreadable,
                                                "--cluster-tls-ca", c.ca()] + port))
        for named, flags in cases:
            with self.subTest(flags=flags):
                code, stderr, took = self.refused(*flags)
                self.assertEqual(code, 2, stderr)
                self.assertIn(named, stderr)
                self.assertLess(took, 5, "refused at once, never a hang")
        # The messages say what is wrong.
        _, stderr, _ = self.refused("--cluster-tls-cert", c.cert("node-a"), "--cluster-tls-key",
                                    c.key("node-b"), "--cluster-tls-ca", c.ca(), *port)
        self.assertIn("does not match the certificate", stderr)
        _, stderr, _ = self.refused(*c.flags("rogue", rogue=True)[:4], "--cluster-tls-ca",
                                    c.ca(), *port)
        self.assertIn("unable to get local issuer certificate", stderr)
        _, stderr, _ = self.refused("--host", "0.0.0.0", *port)
        self.assertIn("without TLS", stderr)
        _, stderr, _ = self.refused("--cluster-tls-cert", c.cert("node-b"), "--cluster-tls-key",
                                    c.encrypted_key, "--cluster-tls-key-passphrase",
                                    "wrong-Passphrase-XYZ", "--cluster-tls-ca", c.ca(), *port)
        self.assertIn("cannot be decrypted", stderr)
        self.assertNotIn("wrong-Passphrase-XYZ", stderr)  # a passphrase is never echoed

    def test_insecure_starts_with_a_warning_and_says_plain(self):
        a = Node("node-a")
        self.start_node(a, tls=False, extra=["--cluster-host", "0.0.0.0", "--cluster-insecure"])
        self.assertEqual(cluster_view(a)["transport"], "plain")
        self.assertIn("--cluster-insecure", a.gw.output())
        self.assertIn("without authentication", a.gw.output())
        loop = Node("node-b")
        self.start_node(loop, tls=False)
        self.assertEqual(cluster_view(loop)["transport"], "plain")

    def test_an_encrypted_key_opens_with_the_passphrase_from_the_environment(self):
        a, b = Node("node-a"), Node("node-b")
        self.start_node(a, [b])
        start_with_encrypted_key(self, b, [a], self.certs)
        for n in (a, b):
            wait_until(lambda: members_up(n) == ["node-a", "node-b"], 10, what="linked")
        self.assertNotIn(self.certs.passphrase, b.gw.output())
        for path in ("/admin/actors", "/admin/cluster", "/admin/workers"):
            self.assertNotIn(self.certs.passphrase, get(b.url + path).text)

if __name__ == "__main__":
    unittest.main()
