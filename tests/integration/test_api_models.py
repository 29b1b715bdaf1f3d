"""One /v1/models for every fleet: regular, PD, mixed (self-hosted and providers), empty."""

import unittest

from harness import ProcessTestCase, free_port, get, post, wait_until
from provider_stub import ProviderStub


def listing(gw):
    r = get(gw.url + "/v1/models")
    return r.status, r.json()


def ids(gw):
    status, body = listing(gw)
    return [m["id"] for m in body["data"]] if status == 200 else []


class ModelsTestCase(ProcessTestCase):
    def assert_openai_list(self, body):
        self.assertEqual(body["object"], "list")
        for m in body["data"]:
            self.assertEqual(set(m), {"id", "object", "created", "owned_by"})
            self.assertEqual(m["object"], "model")
            self.assertIsInstance(m["created"], int)


class RegularFleet(ModelsTestCase):
    def test_models_are_deduplicated_sorted_and_stable(self):
        b = self.sim(model="model-b")
        a1 = self.sim(model="model-a")
        a2 = self.sim(model="model-a")
        slash = self.sim(model="org/model-c")
        gw = self.gateway(workers=[b, a1, a2, slash])
        wait_until(lambda: len(ids(gw)) == 3, 10, what="three models")
        status, body = listing(gw)
        self.assertEqual(status, 200)
        self.assert_openai_list(body)
        self.assertEqual([m["id"] for m in body["data"]], ["model-a", "model-b", "org/model-c"])
        self.assertTrue(all(m["owned_by"] == "self_hosted" for m in body["data"]))
        self.assertEqual(listing(gw), (status, body))  # same fleet, same answer
        one = get(gw.url + "/v1/models/model-a")
        self.assertEqual(one.status, 200)
        self.assertEqual(one.json(), body["data"][0])
        for path in ("/v1/models/org/model-c", "/v1/models/org%2Fmodel-c"):
            r = get(gw.url + path)
            self.assertEqual((r.status, r.json()["id"]), (200, "org/model-c"), path)
        missing = get(gw.url + "/v1/models/nope")
        self.assertEqual(missing.status, 404)
        self.assertEqual(missing.json()["error"]["code"], "model_not_found")

    def test_unhealthy_workers_models_are_not_listed(self):
        up = self.sim(model="up")
        down = self.sim(model="down")
        gw = self.gateway("--health-failure-threshold", "1", "--health-check-interval-secs", "0.2",
                          workers=[up, down])
        wait_until(lambda: len(ids(gw)) == 2, 10, what="both models")
        down.configure(health_status=503)
        wait_until(lambda: any(w["health"] == "unhealthy" for w in gw.workers()), 10,
                   what="the unhealthy worker")
        self.assertEqual(ids(gw), ["up"])


class EmptyFleet(ModelsTestCase):
    def test_no_model_is_a_503(self):
        gw = self.gateway()
        r = get(gw.url + "/v1/models")
        self.assertEqual(r.status, 503)
        self.assertEqual(r.json()["error"]["code"], "service_unavailable")
        self.assertIn("no model", r.json()["error"]["message"])
        self.assertEqual(get(gw.url + "/v1/models/anything").status, 404)


class PdFleet(ModelsTestCase):
    def test_a_pd_model_is_listed_once_with_both_halves(self):
        port = free_port()
        prefill = self.sim(model="pd-model", role="prefill", bootstrap_port=port)
        decode = self.sim(model="pd-model", role="decode")
        regular = self.sim(model="plain")
        gw = self.gateway("--pd-disaggregation", "--prefill", prefill.url, str(port),
                          "--decode", decode.url, workers=[regular])
        wait_until(lambda: ids(gw) == ["pd-model", "plain"], 10, what="both models")
        status, body = listing(gw)
        self.assert_openai_list(body)
        self.assertTrue(all(m["owned_by"] == "self_hosted" for m in body["data"]))

    def test_half_a_pair_is_not_listed(self):
        port = free_port()
        prefill = self.sim(model="pd-model", role="prefill", bootstrap_port=port)
        gw = self.gateway("--pd-disaggregation", "--prefill", prefill.url, str(port))
        wait_until(lambda: gw.workers() and gw.workers()[0]["health"] == "healthy", 10,
                   what="the prefill worker")
        self.assertEqual(get(gw.url + "/v1/models").status, 503)


class MixedFleet(ModelsTestCase):
    def setUp(self):
        super().setUp()
        self.stubs = [ProviderStub(models=["claude-x", "shared"], require_key="sk-a"),
                      ProviderStub(models=["gpt-x"], require_key="sk-o")]

    def tearDown(self):
        for s in self.stubs:
            s.stop()
        super().tearDown()

    def test_self_hosted_and_providers_models_in_one_list(self):
        local = self.sim(model="shared")
        gw = self.gateway(workers=[local])
        anthropic, openai = self.stubs
        for url, provider, key in ((anthropic.url, "anthropic", "sk-a"),
                                   (openai.url, "openai", "sk-o")):
            r = post(gw.url + "/workers", {"url": url, "provider": provider, "api_key": key})
            self.assertEqual(r.status, 202, r)
        wait_until(lambda: len(ids(gw)) == 3, 10, what="every model")
        status, body = listing(gw)
        self.assert_openai_list(body)
        owners = {m["id"]: m["owned_by"] for m in body["data"]}
        # A model served by a self-hosted worker and a provider is the fleet's own.
        self.assertEqual(owners, {"claude-x": "anthropic", "gpt-x": "openai",
                                  "shared": "self_hosted"})
        self.assertEqual(get(gw.url + "/v1/models/gpt-x").json()["owned_by"], "openai")


if __name__ == "__main__":
    unittest.main()
