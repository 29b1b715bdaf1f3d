"""smg's cache and load utilities: POST /flush_cache and GET /get_loads.

Each sends one call to every self-hosted worker at once (`POST /flush_cache`, `GET /get_load`)
and joins the answers: who flushed and who did not (200, or 206 when some failed), each worker's
reported load (tokens in use, summed over its DP ranks; -1 with the reason when it gave none)
beside the requests the gateway has in flight to it. troupe-sim workers answer both routes; a
recording stub stands in for an engine without them (404), and a stopped one does not answer.
"""

import unittest

from harness import ProcessTestCase, Stream, get, post, wait_until
from stub_worker import StubWorker

MODEL = "sim-model"
PROMPT = "the same long system prompt, again and again, " * 8


def chat(gw):
    return post(gw.url + "/v1/chat/completions",
                {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": PROMPT}]})


class FleetOpsTest(ProcessTestCase):
    def test_flush_cache_empties_every_workers_cache(self):
        sims = [self.sim(), self.sim()]
        gw = self.gateway(workers=sims)
        for _ in range(4):
            self.assertEqual(chat(gw).status, 200)
        self.assertGreater(sum(s.stats()["cache"]["blocks"] for s in sims), 0)
        r = post(gw.url + "/flush_cache")
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(sorted(body["successful"]), sorted(s.url for s in sims))
        self.assertEqual(body["failed"], [])
        self.assertEqual(body["total_workers"], 2)
        self.assertIn("all 2 workers", body["message"])
        self.assertEqual([s.stats()["cache"]["blocks"] for s in sims], [0, 0])

    def test_a_worker_that_cannot_flush_makes_it_partial(self):
        sim = self.sim()
        stub = StubWorker(model=MODEL)   # answers 404, as an engine without the route would
        gone = StubWorker(model=MODEL)   # stopped below: connection refused
        self.addCleanup(stub.stop)
        gw = self.gateway(workers=[sim, stub, gone])
        gone.stop()
        stub.configure(status=404, error_message="no route /flush_cache")
        r = post(gw.url + "/flush_cache")
        self.assertEqual(r.status, 206, r)
        body = r.json()
        self.assertEqual(body["successful"], [sim.url])
        failed = {f["worker"]: f["error"] for f in body["failed"]}
        self.assertEqual(set(failed), {stub.url, gone.url})
        self.assertIn("404", failed[stub.url])
        self.assertIn("connect", failed[gone.url])
        self.assertIn("1 succeeded, 2 failed", body["message"])
        self.assertEqual(stub.requests("POST")[-1]["path"], "/flush_cache")
        # The gateway keeps serving, and no load is left behind by the calls.
        stub.configure(status=200)
        self.assertEqual(chat(gw).status, 200)
        wait_until(lambda: all(v == 0 for v in gw.loads().values()), 5, what="loads at 0")

    def test_no_workers_is_nothing_to_flush(self):
        gw = self.gateway()
        r = post(gw.url + "/flush_cache")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["total_workers"], 0)
        r = get(gw.url + "/get_loads")
        self.assertEqual(r.json(), {"loads": [], "total_workers": 0, "successful": 0,
                                    "failed": 0})

    def test_get_loads_reports_each_workers_own_load(self):
        busy = self.sim("--itl-ms", "200", zero_latency=False)
        idle = self.sim()
        stub = StubWorker(model=MODEL)
        self.addCleanup(stub.stop)
        gw = self.gateway("--policy", "round_robin", workers=[busy, idle, stub])
        # A long stream held at the busy simulator: it has tokens in use.
        s = Stream(busy.url + "/v1/chat/completions",
                   {"model": MODEL, "max_tokens": 50, "stream": True,
                    "messages": [{"role": "user", "content": PROMPT}]})
        try:
            wait_until(lambda: busy.stats()["active"] == 1, 5, what="a request at the simulator")
            r = get(gw.url + "/get_loads")
            self.assertEqual(r.status, 200, r)
            body = r.json()
            loads = {e["worker"]: e for e in body["loads"]}
            self.assertEqual((body["total_workers"], body["successful"], body["failed"]),
                             (3, 2, 1))
            self.assertGreater(loads[busy.url]["load"], 0)
            self.assertEqual(loads[idle.url]["load"], 0)
            self.assertEqual(loads[stub.url]["load"], -1)
            self.assertIn("404", loads[stub.url]["error"])
            self.assertEqual(loads[busy.url]["worker_type"], "regular")
            self.assertEqual(loads[idle.url]["in_flight"], 0)
        finally:
            s.close()

    def test_they_need_the_api_key(self):
        sim = self.sim()
        gw = self.gateway(workers=[sim], api_key="k")
        self.assertEqual(post(gw.url + "/flush_cache").status, 401)
        self.assertEqual(get(gw.url + "/get_loads").status, 401)
        self.assertEqual(post(gw.url + "/flush_cache", headers=gw.auth()).status, 200)
        self.assertEqual(get(gw.url + "/get_loads", headers=gw.auth()).status, 200)


if __name__ == "__main__":
    unittest.main()
