"""External providers: header rules, credential isolation, provider flags, HTTPS upstreams.

Stub upstreams (provider_stub.py) record the exact headers the gateway sends them.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import Gateway, ProcessTestCase, get, post, wait_until
from provider_stub import ProviderStub

# What the gateway's HTTP client adds to every request itself (framing, not forwarded).
FRAMING = {"host", "content-type", "content-length"}

CLIENT_HEADERS = {
    "Authorization": "Bearer sk-client-bearer",
    "x-api-key": "sk-ant-client",
    "anthropic-version": "2024-10-22",
    "anthropic-beta": "prompt-caching-2024-07-31",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "vendor=1",
    "x-routing-key": "session-42",
    "Cookie": "session=secret-cookie",
    "Keep-Alive": "timeout=5",
    "TE": "trailers",
    "Upgrade": "h2c",
    "Proxy-Authorization": "Basic c2VjcmV0",
    "x-custom-secret": "do-not-forward",
}

MESSAGE = {"model": "shared", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "shared", "messages": [{"role": "user", "content": "hi"}]}


class ProviderTestCase(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.stubs = []

    def tearDown(self):
        for s in self.stubs:
            s.stop()
        super().tearDown()

    def stub(self, **kw):
        s = ProviderStub(**kw)
        self.stubs.append(s)
        return s

    def add_worker(self, gw, url, **spec):
        r = post(gw.url + "/workers", {"url": url, **spec}, headers=gw.auth())
        self.assertEqual(r.status, 202, r)
        return r.json()["id"]

    def wait_routable(self, gw, count):
        wait_until(lambda: sum(w["routable"] for w in gw.workers()) >= count, 10,
                   what=f"{count} routable workers")


class HeaderRules(ProviderTestCase):
    def test_anthropic_upstream_gets_only_credentials_versions_and_request_id(self):
        a = self.stub(models=["shared"])
        gw = self.gateway()
        self.add_worker(gw, a.url, provider="anthropic", model_id="shared")
        self.wait_routable(gw, 1)
        a.reply(body={"type": "message", "content": []})
        r = post(gw.url + "/v1/messages?beta=true", MESSAGE,
                 headers={**CLIENT_HEADERS, "x-request-id": "rid-1"})
        self.assertEqual(r.status, 200, r)
        (req,) = a.requests()
        self.assertEqual(req["path"], "/v1/messages?beta=true")
        self.assertEqual(set(req["headers"]) - FRAMING,
                         {"x-api-key", "anthropic-version", "anthropic-beta", "x-request-id"})
        self.assertEqual(req["headers"]["x-api-key"], "sk-ant-client")
        self.assertEqual(req["headers"]["anthropic-version"], "2024-10-22")
        self.assertEqual(req["headers"]["anthropic-beta"], "prompt-caching-2024-07-31")
        self.assertEqual(req["headers"]["x-request-id"], "rid-1")
        self.assertEqual(json.loads(req["body"]), MESSAGE)

    def test_bearer_key_goes_to_anthropic_as_x_api_key_with_default_version(self):
        a = self.stub(models=["shared"])
        gw = self.gateway()
        self.add_worker(gw, a.url, provider="anthropic", model_id="shared")
        self.wait_routable(gw, 1)
        r = post(gw.url + "/v1/messages", MESSAGE, headers={"Authorization": "Bearer sk-ant-b"})
        self.assertEqual(r.status, 200, r)
        h = a.requests()[0]["headers"]
        self.assertEqual(h["x-api-key"], "sk-ant-b")
        self.assertEqual(h["anthropic-version"], "2023-06-01")
        self.assertNotIn("authorization", h)

    def test_other_workers_get_the_allowlist(self):
        o = self.stub(models=["shared"])
        gw = self.gateway()
        self.add_worker(gw, o.url, provider="openai", model_id="shared")
        self.wait_routable(gw, 1)
        r = post(gw.url + "/v1/chat/completions", CHAT, headers=CLIENT_HEADERS)
        self.assertEqual(r.status, 200, r)
        h = o.requests()[0]["headers"]
        self.assertEqual(set(h) - FRAMING, {"authorization", "traceparent", "tracestate",
                                            "x-routing-key", "x-request-id"})
        self.assertEqual(h["authorization"], "Bearer sk-client-bearer")

    def test_hop_by_hop_response_headers_never_reach_the_client(self):
        o = self.stub(models=["shared"])
        gw = self.gateway()
        self.add_worker(gw, o.url, provider="openai", model_id="shared")
        self.wait_routable(gw, 1)
        o.reply(headers={"Connection": "keep-alive, x-hop-secret", "x-hop-secret": "1",
                         "Keep-Alive": "timeout=5", "Proxy-Authenticate": "Basic",
                         "Upgrade": "h2c", "x-visible": "yes"})
        r = post(gw.url + "/v1/chat/completions", CHAT)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.headers.get("x-visible"), "yes")
        for h in ("x-hop-secret", "keep-alive", "proxy-authenticate", "upgrade"):
            self.assertNotIn(h, r.headers)

    def test_a_workers_own_key_replaces_the_clients(self):
        a = self.stub(models=["shared"], require_key="sk-own-anthropic")
        gw = self.gateway()
        self.add_worker(gw, a.url, provider="anthropic", api_key="sk-own-anthropic")
        self.wait_routable(gw, 1)  # its model list was read with its own key
        r = post(gw.url + "/v1/messages", MESSAGE, headers={"x-api-key": "sk-ant-client"})
        self.assertEqual(r.status, 200, r)
        h = a.requests()[0]["headers"]
        self.assertEqual(h["x-api-key"], "sk-own-anthropic")
        self.assertNotIn("sk-ant-client", a.all_headers())
        listing = [q for q in a.requests(data_plane=False) if q["path"].startswith("/v1/models")]
        self.assertEqual(listing[0]["path"], "/v1/models?limit=1000")
        self.assertEqual(listing[0]["headers"]["anthropic-version"], "2023-06-01")

    def test_the_gateways_own_key_never_reaches_a_provider(self):
        o = self.stub(models=["shared"])
        a = self.stub(models=["claude"])
        gw = self.gateway(api_key="gw-secret")
        self.add_worker(gw, o.url, provider="openai", model_id="shared")
        self.add_worker(gw, a.url, provider="anthropic", model_id="claude")
        self.wait_routable(gw, 2)
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT, headers=gw.auth()).status,
                         200)
        msg = dict(MESSAGE, model="claude")
        self.assertEqual(post(gw.url + "/v1/messages", msg,
                              headers={"x-api-key": "gw-secret"}).status, 200)
        for s in (o, a):
            self.assertFalse(any("gw-secret" in v for v in s.all_headers()))


class CredentialIsolation(ProviderTestCase):
    def test_a_key_sent_for_one_provider_never_reaches_another(self):
        anthropic = self.stub(models=["shared"])
        openai = self.stub(models=["shared"])
        selfhosted = self.stub(models=["shared"])
        gw = self.gateway()
        self.add_worker(gw, anthropic.url, provider="anthropic", model_id="shared")
        self.add_worker(gw, openai.url, provider="openai", model_id="shared")
        self.add_worker(gw, selfhosted.url, model_id="shared")
        self.wait_routable(gw, 3)
        for i in range(6):
            r = post(gw.url + "/v1/messages", MESSAGE, headers={"x-api-key": f"sk-ant-SECRET-{i}"})
            self.assertEqual(r.status, 200, r)
            r = post(gw.url + "/v1/chat/completions", CHAT,
                     headers={"Authorization": f"Bearer sk-oai-SECRET-{i}"})
            self.assertEqual(r.status, 200, r)
        self.assertEqual(len(anthropic.requests()), 6)
        self.assertEqual(len(openai.requests()), 6)
        self.assertEqual(selfhosted.requests(), [])
        self.assertFalse(any("sk-ant-SECRET" in v for v in openai.all_headers()))
        self.assertFalse(any("sk-ant-SECRET" in v for v in selfhosted.all_headers()))
        self.assertFalse(any("sk-oai-SECRET" in v for v in anthropic.all_headers()))
        self.assertFalse(any("sk-oai-SECRET" in v for v in selfhosted.all_headers()))
        # SGLang's native API belongs to self-hosted workers.
        r = post(gw.url + "/generate", {"model": "shared", "text": "hi"},
                 headers={"Authorization": "Bearer sk-local"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(selfhosted.requests()), 1)

    def test_a_provider_that_is_down_does_not_hand_its_requests_to_another(self):
        openai = self.stub(models=["shared"])
        gw = self.gateway()
        # An Anthropic provider nobody answers for: registered, never healthy.
        dead = ProviderStub()
        dead_url = dead.url
        dead.stop()
        self.add_worker(gw, dead_url, provider="anthropic", model_id="shared")
        self.add_worker(gw, openai.url, provider="openai", model_id="shared")
        self.wait_routable(gw, 1)
        r = post(gw.url + "/v1/messages", MESSAGE, headers={"x-api-key": "sk-ant-SECRET"})
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json()["type"], "error")
        self.assertIn("credentials never cross providers", r.json()["error"]["message"])
        self.assertEqual(openai.requests(), [])
        self.assertFalse(any("sk-ant-SECRET" in v for v in openai.all_headers()))

    def test_a_model_of_one_provider_takes_any_api(self):
        anthropic = self.stub(models=["claude-only"])
        gw = self.gateway()
        self.add_worker(gw, anthropic.url, provider="anthropic", model_id="claude-only")
        self.wait_routable(gw, 1)
        r = post(gw.url + "/v1/chat/completions", dict(CHAT, model="claude-only"),
                 headers={"Authorization": "Bearer sk-ant-x"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(anthropic.requests()[0]["headers"]["x-api-key"], "sk-ant-x")


class ProviderFlags(ProviderTestCase):
    def test_provider_urls_and_keys_from_flags_and_environment(self):
        a = self.stub(models=["claude-flag"], require_key="sk-ant-flag")
        o = self.stub(models=["gpt-env"], require_key="sk-oai-env")
        os.environ["OPENAI_API_KEY"] = "sk-oai-env"
        try:
            gw = self.gateway("--anthropic-urls", a.url, "--anthropic-api-key", "sk-ant-flag",
                              "--openai-urls", o.url)
        finally:
            del os.environ["OPENAI_API_KEY"]
        wait_until(lambda: get(gw.url + "/v1/models").status == 200 and
                   len(get(gw.url + "/v1/models").json()["data"]) == 2, 10, what="models")
        models = {m["id"]: m["owned_by"] for m in get(gw.url + "/v1/models").json()["data"]}
        self.assertEqual(models, {"claude-flag": "anthropic", "gpt-env": "openai"})
        workers = {w["url"]: w for w in gw.workers()}
        self.assertEqual(workers[a.url]["provider"], "anthropic")
        self.assertTrue(workers[a.url]["api_key_set"])
        self.assertNotIn("sk-ant-flag", json.dumps(gw.workers()))
        r = post(gw.url + "/v1/messages", dict(MESSAGE, model="claude-flag"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(a.requests()[0]["headers"]["x-api-key"], "sk-ant-flag")

    def test_backend_flag_makes_worker_urls_providers(self):
        o = self.stub(models=["gpt-backend"], require_key="sk-b")
        gw = self.gateway("--backend", "openai", "--openai-api-key", "sk-b", workers=[o.url],
                          wait_ready=True)
        r = post(gw.url + "/v1/chat/completions", dict(CHAT, model="gpt-backend"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(o.requests()[0]["headers"]["authorization"], "Bearer sk-b")
        self.assertEqual(gw.workers()[0]["provider"], "openai")


def make_cert(tmp):
    """A self-signed certificate for localhost and 127.0.0.1: (cert, key) paths."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return cert, key


@unittest.skipUnless(shutil.which("openssl"), "openssl is needed to make a test certificate")
class HttpsUpstreams(ProviderTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="troupe-tls-")
        self.cert, self.key = make_cert(self.tmp)

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_https_provider_with_sni_and_a_trusted_ca(self):
        s = self.stub(models=["tls-model"], require_key="sk-tls", certfile=self.cert,
                      keyfile=self.key)
        by_name = s.url.replace("127.0.0.1", "localhost")
        gw = self.gateway("--upstream-ca-file", self.cert, "--openai-urls", by_name, s.url,
                          "--openai-api-key", "sk-tls")
        self.wait_routable(gw, 2)
        for _ in range(4):  # both workers, the second time on pooled connections
            r = post(gw.url + "/v1/chat/completions", dict(CHAT, model="tls-model"))
            self.assertEqual(r.status, 200, r)
        self.assertEqual(len(s.requests()), 4)
        self.assertIn("localhost", s.sni)  # SNI names the host; never an address
        self.assertEqual(s.requests()[0]["headers"]["authorization"], "Bearer sk-tls")

    def test_an_untrusted_certificate_is_refused(self):
        s = self.stub(models=["tls-model"], certfile=self.cert, keyfile=self.key)
        gw = self.gateway()
        self.add_worker(gw, s.url, provider="openai", model_id="tls-model")
        wait_until(lambda: "certificate verify failed" in gw.output(), 10,
                   what="a failed certificate check in the log")
        r = post(gw.url + "/v1/chat/completions", dict(CHAT, model="tls-model"))
        self.assertEqual(r.status, 503, r)
        self.assertEqual(s.requests(), [])
        self.assertFalse(gw.workers()[0]["routable"])


if __name__ == "__main__":
    unittest.main()
