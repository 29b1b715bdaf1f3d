"""HTTPS for clients (--tls-cert-path/--tls-key-path, --prometheus-tls) and mutual TLS to workers
(--client-cert-path/--client-key-path/--ca-cert-paths). Certificates are made at run time."""

import http.client
import shutil
import socket
import ssl
import unittest

from certs import TestPki
from harness import (TROUPE_BIN, ProcessTestCase, free_port, get, post, subprocess, wait_until)
from stub_worker import StubWorker

CHAT = {"model": "sim-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def scrape(url, context=None):
    return {l.split(" ")[0]: float(l.split(" ")[1])
            for l in get(url, context=context).text.splitlines()
            if l and not l.startswith("#")}


@unittest.skipUnless(shutil.which("openssl"), "openssl makes the test certificates")
class TlsTestCase(ProcessTestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki = TestPki()

    @classmethod
    def tearDownClass(cls):
        cls.pki.cleanup()

    def tls_flags(self):
        return ["--tls-cert-path", self.pki.server_cert, "--tls-key-path", self.pki.server_key]

    def https_gateway(self, *flags, **kw):
        return self.gateway(*self.tls_flags(), *flags, tls_context=self.pki.client_context(), **kw)


class HttpsClients(TlsTestCase):
    def test_the_api_and_the_admin_page_are_served_over_https_only(self):
        worker = self.sim()
        gw = self.https_gateway(workers=[worker])
        self.assertTrue(gw.url.startswith("https://"))
        self.assertIn(f"troupe listening on https://127.0.0.1:{gw.port}", gw.output())
        r = gw.post("/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["object"], "chat.completion")
        page = gw.get("/admin")
        self.assertEqual(page.status, 200)
        self.assertIn("text/html", page.headers["content-type"])
        self.assertIn("registry", gw.get("/admin/actors").text)
        # Two requests on one kept-alive TLS connection, then a stream.
        conn = http.client.HTTPSConnection("127.0.0.1", gw.port, context=self.pki.client_context(),
                                           timeout=10)
        for _ in range(2):
            conn.request("GET", "/v1/models")
            res = conn.getresponse()
            self.assertEqual(res.status, 200)
            self.assertIn(b"sim-model", res.read())
        conn.request("POST", "/v1/chat/completions",
                     body=b'{"model":"sim-model","stream":true,"max_tokens":3,'
                          b'"messages":[{"role":"user","content":"hi"}]}',
                     headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        self.assertEqual(res.status, 200)
        self.assertTrue(res.read().rstrip().endswith(b"data: [DONE]"))
        conn.close()

    def test_tls_1_2_or_newer_and_alpn_http_1_1(self):
        gw = self.https_gateway()
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.subTest(version=version):
                ctx = self.pki.client_context()
                ctx.minimum_version = ctx.maximum_version = version
                ctx.set_alpn_protocols(["h2", "http/1.1"])
                with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as raw:
                    with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        self.assertEqual(tls.version(), version.name.replace("_", "."))
                        self.assertEqual(tls.selected_alpn_protocol(), "http/1.1")
                        tls.sendall(b"GET /liveness HTTP/1.1\r\nHost: x\r\n\r\n")
                        self.assertTrue(tls.recv(4096).startswith(b"HTTP/1.1 200"))

    def test_old_protocols_and_plain_http_are_refused_and_counted_while_others_are_served(self):
        gw = self.https_gateway()
        metrics = f"http://127.0.0.1:{gw.metrics_port}/metrics"
        before = scrape(metrics).get("troupe_tls_handshake_failures_total", 0)
        old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        old.check_hostname = False
        old.verify_mode = ssl.CERT_NONE
        try:
            old.minimum_version = ssl.TLSVersion.TLSv1
            old.maximum_version = ssl.TLSVersion.TLSv1_1
            old.set_ciphers("DEFAULT@SECLEVEL=0")
        except (ValueError, ssl.SSLError):
            old = None
        if old is not None:
            with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as raw:
                with self.assertRaises(ssl.SSLError):
                    old.wrap_socket(raw, server_hostname="127.0.0.1")
        # A plain HTTP request on the HTTPS port: no HTTP answer, the connection is closed.
        with socket.create_connection(("127.0.0.1", gw.port), timeout=5) as plain:
            plain.sendall(b"GET /liveness HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            try:
                while chunk := plain.recv(4096):
                    data += chunk
            except ConnectionResetError:
                pass
            self.assertNotIn(b"HTTP/1.1", data)
        self.assertEqual(gw.get("/liveness").status, 200)
        expected = before + (2 if old is not None else 1)
        wait_until(lambda: scrape(metrics).get("troupe_tls_handshake_failures_total") == expected,
                   5, what="the failed handshakes counted")

    def test_the_api_key_still_guards_the_api_over_https(self):
        worker = self.sim()
        gw = self.https_gateway(workers=[worker], api_key="sk-tls")
        r = gw.post("/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 401, r)
        self.assertEqual(r.json()["error"]["code"], "unauthorized")
        self.assertEqual(gw.post("/v1/chat/completions", CHAT, headers=gw.auth()).status, 200)

    def test_metrics_stay_plain_unless_prometheus_tls_is_asked(self):
        gw = self.https_gateway()
        self.assertEqual(get(f"http://127.0.0.1:{gw.metrics_port}/metrics").status, 200)
        gw2 = self.https_gateway("--prometheus-tls")
        url = f"https://127.0.0.1:{gw2.metrics_port}/metrics"
        r = get(url, context=self.pki.client_context())
        self.assertEqual(r.status, 200)
        self.assertIn("troupe_", r.text)
        self.assertIn(f"metrics on https://127.0.0.1:{gw2.metrics_port}/metrics", gw2.output())
        with self.assertRaises(OSError):
            get(f"http://127.0.0.1:{gw2.metrics_port}/metrics", timeout=3)


class StartupRefusals(TlsTestCase):
    def refused(self, *flags):
        p = subprocess.run([TROUPE_BIN, "--port", str(free_port()), "--prometheus-port", "0",
                            *flags], capture_output=True, text=True, timeout=10)
        return p.returncode, p.stderr

    def test_bad_tls_files_stop_start_up_with_exit_code_2_naming_the_flag(self):
        pki = self.pki
        garbage = pki.write("garbage.pem", "this is not PEM\n")
        other_cert, other_key = pki.issue("other-server")
        client = ["--worker-urls", "https://127.0.0.1:1"]
        cases = [
            (["--tls-cert-path", pki.server_cert], "--tls-key-path"),
            (["--tls-key-path", pki.server_key], "--tls-cert-path"),
            (["--tls-cert-path", pki.path("missing.crt"), "--tls-key-path", pki.server_key],
             "--tls-cert-path"),
            (["--tls-cert-path", garbage, "--tls-key-path", pki.server_key], "--tls-cert-path"),
            (["--tls-cert-path", pki.server_cert, "--tls-key-path", garbage], "--tls-key-path"),
            (["--tls-cert-path", pki.server_key, "--tls-key-path", pki.server_key],
             "--tls-cert-path"),
            (["--tls-cert-path", pki.server_cert, "--tls-key-path", other_key], "--tls-key-path"),
            (["--prometheus-tls"], "--prometheus-tls"),
            (client + ["--client-cert-path", pki.client_cert], "--client-key-path"),
            (client + ["--client-key-path", pki.client_key], "--client-cert-path"),
            (client + ["--client-cert-path", garbage, "--client-key-path", pki.client_key],
             "--client-cert-path"),
            (client + ["--client-cert-path", pki.client_cert, "--client-key-path", other_key],
             "--client-key-path"),
            (client + ["--ca-cert-paths", pki.ca_cert, garbage], "--ca-cert-paths"),
            (client + ["--ca-cert-paths", pki.path("missing-ca.crt")], "--ca-cert-paths"),
        ]
        for flags, named in cases:
            with self.subTest(flags=flags):
                code, stderr = self.refused(*flags)
                self.assertEqual(code, 2, stderr)
                self.assertIn(named, stderr)
                self.assertLess(len(stderr.splitlines()), 4, stderr)


class WorkerMutualTls(TlsTestCase):
    def tls_worker(self, **kw):
        stub = StubWorker(model="sim-model", tls=self.pki.server_context(**kw))
        self.addCleanup(stub.stop)
        return stub

    def test_the_gateway_presents_its_client_certificate_to_workers_that_require_one(self):
        stub = self.tls_worker(require_client_cert=True)
        gw = self.gateway("--ca-cert-paths", self.pki.ca_cert,
                          "--client-cert-path", self.pki.client_cert,
                          "--client-key-path", self.pki.client_key, workers=[stub.url])
        r = post(gw.url + "/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 200, r)
        seen = stub.requests("POST")
        self.assertEqual(len(seen), 1)
        self.assertEqual(seen[0]["client_cert"], "gateway-client")
        self.assertEqual(stub.handshake_errors, [])

    def test_without_a_client_certificate_the_worker_refuses_and_the_client_gets_an_error(self):
        stub = self.tls_worker(require_client_cert=True)
        rogue_cert, rogue_key = self.pki.issue("rogue", ca=self.pki.other_ca)
        for flags in ([], ["--client-cert-path", rogue_cert, "--client-key-path", rogue_key]):
            with self.subTest(flags=flags):
                gw = self.gateway("--ca-cert-paths", self.pki.ca_cert, *flags)
                # Registered with its model, so the model is known although the worker, which
                # refuses the gateway's handshakes, never answers a health check.
                r = post(gw.url + "/workers", {"url": stub.url, "model_id": "sim-model"})
                self.assertEqual(r.status, 202, r)
                wait_until(lambda: stub.handshake_errors, 10, what="a refused handshake")
                r = post(gw.url + "/v1/chat/completions", CHAT)
                self.assertEqual(r.status, 503, r)
                self.assertEqual(r.json()["error"]["code"], "no_worker_available")
                self.assertEqual(stub.requests("POST"), [])
                self.assertFalse(gw.workers()[0]["routable"])
                self.assertEqual(gw.get("/liveness").status, 200)
                gw.stop()
                stub.handshake_errors.clear()

    def test_server_authentication_only_needs_just_the_ca(self):
        stub = self.tls_worker()
        gw = self.gateway("--ca-cert-paths", self.pki.ca_cert, workers=[stub.url])
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT).status, 200)
        self.assertIsNone(stub.requests("POST")[0]["client_cert"])


if __name__ == "__main__":
    unittest.main()
