"""The admin endpoint, metrics and logs, end to end: real troupe and troupe-sim processes.

`/admin/*` JSON shapes and their key, requests in flight by phase, counters moved by the right
amounts after known traffic, the scrape validated by `promtool check metrics`, `--log-json`
lines that parse and carry the request id, and the admin page rendered by headless Chromium.
"""

import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

from harness import (TROUPE_BIN, Process, ProcessTestCase, Stream, free_port, get, post,
                     request, wait_until)

MODEL = "sim-model"
CHAT = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "Hello there"}]}

# Every metric the gateway must expose (issue 5), by name.
METRICS = [
    "troupe_http_requests_total", "troupe_http_request_duration_seconds",
    "troupe_router_requests_total", "troupe_router_request_errors_total",
    "troupe_router_ttft_seconds", "troupe_worker_requests_active", "troupe_worker_health",
    "troupe_worker_cb_state", "troupe_pd_requests_total", "troupe_pd_leg_failures_total",
    "troupe_cluster_members", "troupe_cluster_propagation_seconds", "troupe_actor_mailbox_size",
    "troupe_actors_running", "troupe_requests_in_flight",
]


def scrape(gw):
    r = get(f"http://127.0.0.1:{gw.metrics_port}/metrics")
    assert r.status == 200, r
    return r.text


def samples(text):
    """{series: value} of a text exposition (`name{labels}` exactly as exposed)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            out[series] = float(value)
    return out


def by_name(actors, name):
    return next((a for a in actors if a["name"] == name), None)


class AdminViewsTest(ProcessTestCase):
    def setUp(self):
        super().setUp()
        self.worker = self.sim()
        self.gw = self.gateway(workers=[self.worker])
        self.worker_id = self.gw.workers()[0]["id"]

    def admin(self, path):
        r = get(self.gw.url + path)
        self.assertEqual(r.status, 200, r)
        self.assertIn("application/json", r.headers["content-type"])
        return r.json()

    def test_actors_lists_every_long_lived_actor_with_its_state_summary(self):
        body = self.admin("/admin/actors")
        self.assertEqual(body["node"], f"127.0.0.1:{self.gw.port}")
        actors = body["actors"]
        kinds = sorted(a["kind"] for a in actors)
        self.assertEqual(kinds, ["inspector", "policy", "policy", "policy", "registry",
                                 "worker_proxy"])
        for a in actors:
            self.assertEqual(a["status"], "ok", a)
            self.assertIsInstance(a["id"], int)
            self.assertIsInstance(a["mailbox_size"], int)
            self.assertIsInstance(a["summary"], dict)
        proxy = by_name(actors, "worker_proxy:" + self.worker_id)
        self.assertIsNotNone(proxy, actors)
        for field in ("url", "health", "circuit_breaker", "in_flight", "pool_connections"):
            self.assertIn(field, proxy["summary"])
        self.assertEqual(proxy["summary"]["url"], self.worker.url)
        self.assertEqual(proxy["summary"]["health"], "healthy")
        registry = by_name(actors, "registry")["summary"]
        self.assertEqual((registry["workers"], registry["models"]), (1, 1))
        self.assertGreaterEqual(registry["version"], 1)
        self.assertEqual(by_name(actors, "policy:regular")["summary"]["strategy"], "round_robin")

    def test_actors_filtered_by_kind_and_bounded_by_limit(self):
        everyone = self.admin("/admin/actors")
        self.assertEqual(everyone["registered"], 6)
        self.assertEqual(everyone["matched"], 6)
        policies = self.admin("/admin/actors?kind=policy")
        self.assertEqual(sorted(a["name"] for a in policies["actors"]),
                         ["policy:decode", "policy:prefill", "policy:regular"])
        self.assertEqual((policies["registered"], policies["matched"]), (6, 3))
        two = self.admin("/admin/actors?kind=registry,worker_proxy,nobody")
        self.assertEqual(sorted(a["kind"] for a in two["actors"]), ["registry", "worker_proxy"])
        # In id order: the inspector first, then what was spawned first.
        first = self.admin("/admin/actors?limit=2")
        self.assertEqual([a["id"] for a in first["actors"]],
                         [a["id"] for a in everyone["actors"][:2]])
        self.assertEqual((first["registered"], first["matched"]), (6, 6))
        self.assertEqual(len(self.admin("/admin/actors?kind=worker_proxy&limit=5")["actors"]), 1)
        self.assertEqual(self.admin("/admin/actors?kind=nobody")["actors"], [])
        for query, param in (("limit=0", "limit"), ("limit=-1", "limit"), ("limit=x", "limit"),
                             ("kind=", "kind"), ("kind=,", "kind")):
            r = get(self.gw.url + "/admin/actors?" + query)
            self.assertEqual(r.status, 400, query)
            self.assertEqual(r.json()["error"]["param"], param, r.text)

    def test_running_actors_count_each_request_actor_while_it_runs(self):
        rest = self.admin("/admin/actors")
        self.assertEqual(rest["in_flight"], 0)
        self.assertGreaterEqual(rest["running"], len(rest["actors"]))
        self.worker.configure(stall_ms=1500)
        done = threading.Event()
        threading.Thread(target=lambda: (post(self.gw.url + "/v1/chat/completions", CHAT),
                                         done.set()), daemon=True).start()
        busy = wait_until(lambda: (lambda b: b if b["in_flight"] == 1 else None)(
            self.admin("/admin/actors")), what="one request in flight")
        self.assertEqual(busy["running"], rest["running"] + 1, "one actor for the request")
        live = samples(scrape(self.gw))
        self.assertEqual(live["troupe_actors_running"], rest["running"] + 1)
        self.assertEqual(live["troupe_requests_in_flight"], 1)
        self.assertTrue(done.wait(10))
        wait_until(lambda: self.admin("/admin/actors")["running"] == rest["running"],
                   what="the request actor gone")
        live = samples(scrape(self.gw))
        self.assertEqual(live["troupe_actors_running"], rest["running"])
        self.assertEqual(live["troupe_requests_in_flight"], 0)

    def test_one_actor_has_its_full_state_and_unknown_ids_are_404(self):
        actors = self.admin("/admin/actors")["actors"]
        proxy = by_name(actors, "worker_proxy:" + self.worker_id)
        detail = self.admin(f"/admin/actors/{proxy['id']}")
        self.assertEqual(detail["id"], proxy["id"])
        self.assertEqual(detail["status"], "ok")
        self.assertEqual(detail["state"]["models"], [MODEL])  # structured fields are kept
        self.assertEqual(detail["state"]["worker_id"], self.worker_id)
        self.assertEqual(get(self.gw.url + "/admin/actors/99999999").status, 404)
        self.assertEqual(get(self.gw.url + "/admin/actors/registry").status, 404)

    def test_a_removed_worker_leaves_the_actor_list(self):
        r = request("DELETE", f"{self.gw.url}/workers/{self.worker_id}")
        self.assertEqual(r.status, 200, r)
        wait_until(lambda: by_name(self.admin("/admin/actors")["actors"],
                                   "worker_proxy:" + self.worker_id) is None,
                   what="proxy deregistered")

    def test_requests_show_route_model_phase_worker_and_age(self):
        self.assertEqual(self.admin("/admin/requests")["requests"], [])
        # Dispatched: the worker sits on the request before answering.
        self.worker.configure(stall_ms=1500)
        done = threading.Event()
        threading.Thread(target=lambda: (post(self.gw.url + "/v1/chat/completions", CHAT),
                                         done.set()), daemon=True).start()
        body = wait_until(lambda: (lambda b: b if b["requests"] else None)(
            self.admin("/admin/requests?older_than_ms=200")), what="request older than 200 ms")
        self.assertEqual(body["in_flight"], 1)
        self.assertEqual(body["older_than_ms"], 200)
        req = body["requests"][0]
        self.assertEqual((req["route"], req["model"], req["phase"], req["workers"]),
                         ("chat_completions", MODEL, "dispatched", [self.worker_id]))
        self.assertGreaterEqual(req["age_ms"], 200)
        self.assertEqual(len(req["id"]), 32)
        self.assertEqual(self.admin("/admin/requests?older_than_ms=600000")["requests"], [])
        self.assertTrue(done.wait(10))
        self.assertEqual(get(self.gw.url + "/admin/requests?older_than_ms=-5").status, 400)
        self.assertEqual(get(self.gw.url + "/admin/requests?older_than_ms=abc").status, 400)

        # Streaming: an event stream's head was relayed.
        self.worker.configure(stall_ms=0, itl_ms=300)
        s = Stream(self.gw.url + "/v1/chat/completions",
                   dict(CHAT, stream=True, max_tokens=50), headers={"X-Request-Id": "rid-live"})
        try:
            next(s.events())
            req = wait_until(lambda: next((r for r in self.admin("/admin/requests")["requests"]
                                           if r["phase"] == "streaming"), None),
                             what="a streaming request")
            self.assertEqual(req["id"], "rid-live")
        finally:
            s.close()
        wait_until(lambda: self.admin("/admin/requests")["in_flight"] == 0,
                   what="the stream's end")

    def test_two_requests_with_one_request_id_are_both_in_flight(self):
        # A client may send one X-Request-Id twice at once: each request is its own entry, and
        # the first one's end leaves the second counted (it used to drop it).
        self.worker.configure(stall_ms=0, itl_ms=200)
        streams = [Stream(self.gw.url + "/v1/chat/completions",
                          dict(CHAT, stream=True, max_tokens=max_tokens),
                          headers={"X-Request-Id": "rid-twice"}) for max_tokens in (2, 40)]
        try:
            for s in streams:
                next(s.events())
            body = self.admin("/admin/requests")
            self.assertEqual(body["in_flight"], 2)
            self.assertEqual([r["id"] for r in body["requests"]], ["rid-twice", "rid-twice"])
            list(streams[0].events())  # the short one ends
            body = wait_until(lambda: (lambda b: b if b["in_flight"] == 1 else None)(
                self.admin("/admin/requests")), what="the first request's end")
            self.assertEqual([(r["id"], r["phase"]) for r in body["requests"]],
                             [("rid-twice", "streaming")])
            self.assertEqual(samples(scrape(self.gw))["troupe_requests_in_flight"], 1)
        finally:
            for s in streams:
                s.close()
        wait_until(lambda: self.admin("/admin/requests")["in_flight"] == 0,
                   what="both requests' end")

    def test_cluster_view_has_this_node_as_its_only_member(self):
        body = self.admin("/admin/cluster")
        me = f"127.0.0.1:{self.gw.port}"
        fleet = get(self.gw.url + "/workers").json()
        self.assertEqual(body["self"], me)
        self.assertEqual(body["registry_version"], fleet["version"])
        self.assertEqual(body["counts"], {"up": 1, "suspect": 0, "down": 0})
        self.assertEqual(len(body["members"]), 1)
        m = body["members"][0]
        self.assertEqual((m["name"], m["address"], m["state"], m["self"]), (me, me, "up", True))
        self.assertEqual(m["registry_version"], fleet["version"])
        self.assertEqual(m["workers"], 1)
        self.assertIn("last_heard_ms", m)

    def test_workers_view_has_fleet_and_per_node_load(self):
        me = f"127.0.0.1:{self.gw.port}"
        self.worker.configure(stall_ms=1500)
        done = threading.Event()
        threading.Thread(target=lambda: (post(self.gw.url + "/v1/chat/completions", CHAT),
                                         done.set()), daemon=True).start()
        body = wait_until(lambda: (lambda b: b if b["load"] == 1 else None)(
            self.admin("/admin/workers")), what="load 1")
        self.assertEqual(body["total"], 1)
        self.assertEqual(body["nodes"], [{"name": me, "self": True, "load": 1, "workers": 1}])
        w = body["workers"][0]
        self.assertEqual((w["id"], w["url"], w["health"], w["circuit_breaker"]),
                         (self.worker_id, self.worker.url, "healthy", "closed"))
        self.assertEqual((w["load_total"], w["load_by_node"]), (1, {me: 1}))
        self.assertNotIn("api_key", w)
        self.assertTrue(done.wait(10))

    def test_workers_view_with_a_limit_lists_troubled_workers_first(self):
        # A second worker nobody answers for: registered (with its model), never healthy.
        r = post(self.gw.url + "/workers",
                 {"url": f"http://127.0.0.1:{free_port()}", "model_id": MODEL})
        self.assertIn(r.status, (200, 201, 202), r)
        dead = r.json()["id"]
        everyone = wait_until(lambda: (lambda b: b if b["total"] == 2 else None)(
            self.admin("/admin/workers")), what="two workers")
        self.assertEqual(everyone["listed"], 2)
        self.assertEqual([w["id"] for w in everyone["workers"]][0], self.worker_id,
                         "without a limit: fleet order")
        one = self.admin("/admin/workers?limit=1")
        self.assertEqual((one["total"], one["listed"]), (2, 1))
        self.assertEqual([w["id"] for w in one["workers"]], [dead])
        self.assertNotEqual(one["workers"][0]["health"], "healthy")
        both = self.admin("/admin/workers?limit=5")
        self.assertEqual([w["id"] for w in both["workers"]], [dead, self.worker_id])
        for query in ("limit=0", "limit=-2", "limit=many"):
            r = get(self.gw.url + "/admin/workers?" + query)
            self.assertEqual(r.status, 400, query)
            self.assertEqual(r.json()["error"]["param"], "limit", r.text)


class AdminKeyTest(ProcessTestCase):
    def test_admin_key_guards_admin_routes_and_data_keys_do_not_open_them(self):
        worker = self.sim()
        gw = self.gateway("--admin-api-key", "admin-secret", workers=[worker], api_key="data")
        for path in ("/admin/actors", "/admin/requests", "/admin/cluster", "/admin/workers"):
            with self.subTest(path=path):
                self.assertEqual(get(gw.url + path).status, 401)
                self.assertEqual(get(gw.url + path, headers={"Authorization": "Bearer data"})
                                 .status, 401)
                r = get(gw.url + path, headers={"Authorization": "Bearer admin-secret"})
                self.assertEqual(r.status, 200, r)
        # The page holds no data: it asks for the key itself.
        self.assertEqual(get(gw.url + "/admin").status, 200)
        r = post(gw.url + "/v1/chat/completions", CHAT, headers={"Authorization": "Bearer data"})
        self.assertEqual(r.status, 200, r)

    def test_api_key_guards_admin_routes_without_an_admin_key(self):
        gw = self.gateway(api_key="data")
        self.assertEqual(get(gw.url + "/admin/actors").status, 401)
        self.assertEqual(get(gw.url + "/admin/actors", headers={"Authorization": "Bearer data"})
                         .status, 200)


class MetricsTest(ProcessTestCase):
    def test_counters_move_by_the_traffic_and_promtool_accepts_the_scrape(self):
        worker = self.sim()
        gw = self.gateway(workers=[worker])
        before = samples(scrape(gw))
        for _ in range(3):
            self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT).status, 200)
        for _ in range(2):
            s = Stream(gw.url + "/v1/chat/completions", dict(CHAT, stream=True))
            self.assertEqual(s.status, 200)
            list(s.events())
            s.close()
        self.assertEqual(post(gw.url + "/v1/chat/completions", dict(CHAT, model="nope")).status,
                         404)
        self.assertEqual(post(gw.url + "/v1/chat/completions", "{").status, 400)
        self.assertEqual(get(gw.url + "/no/such/path").status, 404)
        self.assertEqual(get(gw.url + "/admin/actors").status, 200)

        expected = {
            'troupe_router_requests_total{endpoint="chat_completions",model="sim-model",'
            'streaming="false"}': 3,
            'troupe_router_requests_total{endpoint="chat_completions",model="sim-model",'
            'streaming="true"}': 2,
            'troupe_router_requests_total{endpoint="chat_completions",model="unknown",'
            'streaming="false"}': 1,
            'troupe_router_requests_total{endpoint="chat_completions",model="none",'
            'streaming="false"}': 1,
            'troupe_router_request_errors_total{error_type="model_not_found"}': 1,
            'troupe_router_request_errors_total{error_type="invalid_json"}': 1,
            'troupe_router_ttft_seconds_count{model="sim-model"}': 2,
            'troupe_http_requests_total{method="POST",path="/v1/chat/completions",'
            'status_code="200"}': 5,
            'troupe_http_requests_total{method="POST",path="/v1/chat/completions",'
            'status_code="404"}': 1,
            'troupe_http_requests_total{method="POST",path="/v1/chat/completions",'
            'status_code="400"}': 1,
            'troupe_http_requests_total{method="GET",path="unmatched",status_code="404"}': 1,
            'troupe_http_requests_total{method="GET",path="/admin/actors",status_code="200"}': 1,
            'troupe_http_request_duration_seconds_count{method="POST",'
            'path="/v1/chat/completions"}': 7,
        }

        def moved():
            after = samples(scrape(gw))
            delta = {k: after.get(k, 0) - before.get(k, 0) for k in expected}
            return (after, delta) if delta == expected else None

        try:
            after, _ = wait_until(moved, 5, what="counters")
        except AssertionError:
            after = samples(scrape(gw))
            self.assertEqual({k: after.get(k, 0) - before.get(k, 0) for k in expected}, expected)
        worker_label = '{worker="%s"}' % worker.url
        self.assertEqual(after["troupe_worker_health" + worker_label], 1)
        self.assertEqual(after["troupe_worker_cb_state" + worker_label], 0)
        self.assertEqual(after["troupe_worker_requests_active" + worker_label], 0)
        self.assertEqual(after['troupe_cluster_members{state="up"}'], 1)
        self.assertEqual(after["troupe_pd_requests_total"], 0)
        self.assertIn('troupe_actor_mailbox_size{actor="registry"}', after)
        self.assertIn('troupe_actor_mailbox_size{actor="worker_proxy:%s"}'
                      % gw.workers()[0]["id"], after)

        text = scrape(gw)
        for name in METRICS:
            self.assertIn(f"# TYPE {name} ", text)
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=30)
        self.assertEqual(check.returncode, 0,
                         check.stdout.decode() + check.stderr.decode() + "\n" + text)

    def test_pd_requests_and_leg_failures_are_counted(self):
        bootstrap = free_port()
        prefill = self.sim(role="prefill", bootstrap_port=bootstrap)
        decode = self.sim(role="decode")
        gw = self.gateway("--pd-disaggregation", "--prefill", prefill.url, bootstrap,
                          "--decode", decode.url, wait_ready=False)
        wait_until(lambda: get(gw.url + "/readiness").status == 200, 15, what="a routable pair")
        before = samples(scrape(gw))
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT).status, 200)
        decode.configure(fail_status=500)
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT).status, 500)
        after = samples(scrape(gw))
        delta = lambda k: after.get(k, 0) - before.get(k, 0)
        self.assertEqual(delta("troupe_pd_requests_total"), 2)
        self.assertEqual(delta('troupe_pd_leg_failures_total{leg="decode"}'), 1)
        self.assertEqual(delta('troupe_pd_leg_failures_total{leg="prefill"}'), 0)
        self.assertEqual(delta('troupe_router_request_errors_total{error_type="upstream_status"}'),
                         1)

    def test_port_zero_disables_metrics(self):
        port, metrics_port = free_port(), free_port()
        gw = self.start(Process([TROUPE_BIN, "--host", "127.0.0.1", "--port", str(port),
                                 "--prometheus-port", "0"], f"troupe-{port}"))
        wait_until(lambda: get(f"http://127.0.0.1:{port}/liveness", timeout=1).status == 200,
                   what="gateway")
        self.assertNotIn("/metrics", gw.output())
        with self.assertRaises(OSError):
            get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2)


class JsonLogTest(ProcessTestCase):
    def test_every_line_is_json_and_lines_about_a_request_carry_its_id(self):
        worker = self.sim()
        gw = self.gateway("--log-json", workers=[worker])
        odd_id = 'rid-"quoted"\\back'
        odd_model = 'no"such\\model-\u00e9'
        r = post(gw.url + "/v1/chat/completions", dict(CHAT, model=odd_model),
                 headers={"X-Request-Id": odd_id})
        self.assertEqual(r.status, 404, r)
        self.assertEqual(post(gw.url + "/v1/chat/completions", CHAT,
                              headers={"X-Request-Id": "rid-ok"}).status, 200)
        worker.kill()
        r = post(gw.url + "/v1/chat/completions", CHAT, headers={"X-Request-Id": "rid-down"})
        self.assertEqual(r.status, 502, r)

        def lines():
            out = gw.output().splitlines()
            # The summary line is written after the answer went out: wait for it.
            return out if any("rid-down" in l and "status=" in l for l in out) else None

        records = [json.loads(l) for l in wait_until(lines, what="log lines")]
        for rec in records:
            self.assertEqual(set(rec) - {"request_id"}, {"time", "level", "logger", "thread",
                                                         "message"}, rec)
        odd = [r for r in records if r.get("request_id") == odd_id]
        self.assertEqual(len(odd), 1, records)
        self.assertIn("model=" + odd_model, odd[0]["message"])
        self.assertIn("status=404", odd[0]["message"])
        self.assertIn("error=model_not_found", odd[0]["message"])
        ok = [r for r in records if r.get("request_id") == "rid-ok"]
        self.assertEqual(len(ok), 1)
        for field in ("POST /v1/chat/completions", "model=sim-model", "worker=w-", "status=200",
                      "duration_ms=", "ttft_ms="):
            self.assertIn(field, ok[0]["message"])
        down = [r for r in records if r.get("request_id") == "rid-down"]
        self.assertGreaterEqual(len(down), 2, records)  # the worker's failure and the summary
        self.assertIn("warning", [r["level"] for r in down])
        # No line names a request without carrying its id as a field.
        for rec in records:
            for rid in (odd_id, "rid-ok", "rid-down"):
                if rid in rec["message"]:
                    self.assertEqual(rec.get("request_id"), rid, rec)


class _Dom(html.parser.HTMLParser):
    """Text of the table cells, by table id."""

    def __init__(self):
        super().__init__()
        self.tables = {}
        self._table = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = dict(attrs).get("id")
            self.tables[self._table] = []
        elif tag == "td" and self._table:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.tables[self._table].append(self._cell)
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@unittest.skipUnless(os.path.exists(CHROMIUM), "chromium is not installed")
class AdminPageTest(ProcessTestCase):
    def render(self, url):
        """The DOM of `url` after its script ran, as headless Chromium sees it."""
        profile = tempfile.mkdtemp(prefix="troupe-chromium-")
        try:
            r = subprocess.run(
                [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile,
                 "--virtual-time-budget=5000", "--dump-dom", url],
                capture_output=True, timeout=60)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-2000:])
        dom = _Dom()
        dom.feed(r.stdout.decode())
        return dom.tables

    def check_page(self, gw, worker, url):
        worker_id = gw.workers()[0]["id"]
        tables = self.render(url)
        self.assertIn("registry", tables["actors"], tables)
        self.assertIn("policy:regular", tables["actors"])
        self.assertIn("worker_proxy:" + worker_id, tables["actors"])
        self.assertIn(worker.url, tables["workers"])
        self.assertIn(worker_id, tables["workers"])
        self.assertIn("healthy", tables["workers"])
        self.assertIn("up", tables["cluster"])
        self.assertIn(f"127.0.0.1:{gw.port}", tables["cluster"])

    def test_the_page_renders_actors_workers_and_the_cluster(self):
        worker = self.sim()
        gw = self.gateway(workers=[worker])
        self.check_page(gw, worker, gw.url + "/admin")

    def test_the_page_takes_the_admin_key_from_its_fragment(self):
        worker = self.sim()
        gw = self.gateway("--admin-api-key", "s3cret", workers=[worker])
        self.check_page(gw, worker, gw.url + "/admin#key=s3cret")
        # A fragment never reaches the server. Per-request log lines are buffered (written every
        # second and at exit): stop the gateway so that every line it logged is in its output.
        self.assertEqual(gw.stop(), 0)
        out = gw.output()
        self.assertIn("troupe stopped", out)
        self.assertNotIn("s3cret", out)


if __name__ == "__main__":
    unittest.main()
