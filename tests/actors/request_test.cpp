#include "actors/request.hpp"
#include "services/metrics.hpp"
#include "tests/fakes/actor_system.hpp"
#include "tests/fakes/fake_actors.hpp"
#include "tests/fakes/recording_reply.hpp"
#include "tests/fakes/scrape.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using protocol::operation;
using protocol::worker_type;
using test::sample;
using transport::exchange_status;
using json = nlohmann::json;
namespace http = transport::http;

namespace {

const std::string chat_body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
const std::string generate_body = R"({"model":"m","text":"hi"})";

/// Request actors on a deterministic actor system, with fake policies and fake workers: the
/// test plays every worker's answer and moves the clock for backoffs.
struct request_fixture : test::actor_system_fixture {
  boost::asio::io_context ioc;
  gateway_config cfg;
  std::shared_ptr<fleet_view> view = std::make_shared<fleet_view>();
  std::shared_ptr<std::vector<worker_entry_ptr>> pool =
      std::make_shared<std::vector<worker_entry_ptr>>();
  std::shared_ptr<test::policy_log> regular_asked = std::make_shared<test::policy_log>();
  std::shared_ptr<test::policy_log> prefill_asked = std::make_shared<test::policy_log>();
  std::shared_ptr<test::policy_log> decode_asked = std::make_shared<test::policy_log>();
  policy_actor regular = keep(test::spawn_fake_policy(sys, pool, regular_asked));
  policy_actor prefill = keep(test::spawn_fake_policy(sys, pool, prefill_asked));
  policy_actor decode = keep(test::spawn_fake_policy(sys, pool, decode_asked));
  std::shared_ptr<services::metrics> metrics = std::make_shared<services::metrics>();
  std::shared_ptr<services::request_tracker> tracker =
      std::make_shared<services::request_tracker>();
  std::vector<std::unique_ptr<test::fake_worker>> workers;
  services_ptr svc;
  int sent = 0;

  ~request_fixture() { shutdown(); } // before the members the actors use go

  request_fixture() {
    cfg.retry.jitter = 0;
    cfg.retry.initial_backoff = 100ms;
  }

  /// Adds a healthy worker serving model `m` to the fleet and to the policies' choice.
  test::fake_worker& worker(std::string id, worker_type type = worker_type::regular) {
    workers.push_back(std::make_unique<test::fake_worker>(sys, std::move(id), type,
                                                          std::vector<std::string>{"m"}));
    keep(workers.back()->entry()->proxy);
    pool->push_back(workers.back()->entry());
    auto snap = std::make_shared<fleet_snapshot>();
    snap->workers = *pool;
    snap->index = fleet_index::of(snap->workers);
    view->set(std::move(snap));
    return *workers.back();
  }

  /// One client request, as the endpoint layer hands it over.
  struct client {
    std::shared_ptr<test::recording_reply> reply;
    std::string id;
    std::chrono::steady_clock::time_point received;

    unsigned status() const { return reply->full() ? reply->full()->result_int() : 0; }
    json body() const { return json::parse(reply->full()->body()); }
  };

  client send(operation op, std::string body, std::vector<std::string> params = {}) {
    if (!svc) {
      auto s = std::make_shared<gateway_services>(
          gateway_services{sys,
                           ioc,
                           cfg,
                           view,
                           {},
                           regular,
                           prefill,
                           decode,
                           tracker,
                           std::make_shared<services::response_affinity>()});
      s->metrics = metrics;
      s->rooms = std::make_shared<protocol::room_source>(42);
      svc = std::move(s);
    }
    const auto& row = protocol::info(op);
    auto in = std::make_shared<inbound_request>();
    in->op = op;
    in->req = transport::request{http::string_to_verb(row.method), std::string(row.paths[0]), 11};
    in->req.set(http::field::content_type, "application/json");
    in->req.body() = std::move(body);
    auto reply = std::make_shared<test::recording_reply>();
    in->reply = reply;
    in->request_id = "rid-" + std::to_string(++sent);
    in->received = std::chrono::steady_clock::now();
    in->params = std::move(params);
    client c{reply, in->request_id, in->received};
    spawn_request(svc, std::move(in));
    run();
    return c;
  }

  /// The number a metric series shows now.
  double metric(const std::string& series) const { return sample(metrics->scrape(), series); }

  /// True when no request is in flight: every request actor finished.
  bool idle() const { return tracker->size() == 0; }
};

std::string header(const transport::upstream_call& call, std::string_view name) {
  for (auto& [n, v] : call.headers.list()) {
    if (n == name) {
      return v;
    }
  }
  return {};
}

} // namespace

TEST_CASE_METHOD(request_fixture,
                 "a request goes to the worker its policy picked, and the answer back") {
  auto& w = worker("w1");
  auto c = send(operation::chat_completions, chat_body);
  REQUIRE(w.orders() == 1);
  auto& call = w.order().call;
  CHECK(call.method == http::verb::post);
  CHECK(call.target == "/v1/chat/completions");
  CHECK(call.body == chat_body);
  CHECK(header(call, "x-request-id") == c.id);
  CHECK(call.deadline == c.received + cfg.request_timeout);
  REQUIRE(regular_asked->asked.size() == 1);
  auto& sel = regular_asked->asked[0];
  CHECK(sel.model == "m");
  CHECK(sel.role == worker_type::regular);
  CHECK(sel.provider == protocol::provider_kind::openai);
  CHECK(sel.exclude.empty());
  CHECK(c.status() == 0); // nothing before the worker answers
  CHECK_FALSE(idle());

  w.respond(0, 200, R"({"id":"x"})");
  run();
  CHECK(c.status() == 200);
  CHECK(c.body() == json{{"id", "x"}});
  CHECK(idle());
  CHECK(
      metric(
          R"(troupe_router_requests_total{endpoint="chat_completions",model="m",streaming="false"})") ==
      1);
}

TEST_CASE_METHOD(request_fixture,
                 "a worker that cannot be reached is passed over for the next one") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions, chat_body);
  w1.fail(0, exchange_status::connect_failed);
  run();
  REQUIRE(w2.orders() == 1);
  CHECK(w2.order().call.body == chat_body); // the body was kept for the retry
  // Both attempts sent the client's bytes as the request keeps them: one body, never copied.
  CHECK(w2.order().call.body.view().data() == w1.order().call.body.view().data());
  REQUIRE(regular_asked->asked.size() == 2);
  CHECK(regular_asked->asked[1].exclude == std::vector<std::string>{"w1"});
  w2.respond(0, 200, "{}");
  run();
  CHECK(c.status() == 200);
  CHECK(metric(R"(troupe_router_retries_total{reason="connect"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a retryable status is kept from the client and another worker tried "
                 "after the backoff") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions, chat_body);
  w1.respond(0, 503, R"({"error":{"message":"busy"}})");
  run();
  CHECK(c.status() == 0); // kept
  advance(99ms);
  CHECK(w2.orders() == 0); // still backing off
  advance(1ms);
  REQUIRE(w2.orders() == 1);
  w2.respond(0, 200, R"({"ok":true})");
  run();
  CHECK(c.status() == 200);
  CHECK(c.body() == json{{"ok", true}});
  CHECK(metric(R"(troupe_router_retries_total{reason="status"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "with no other worker left, the client gets the kept answer as the "
                 "worker gave it") {
  auto& w1 = worker("w1");
  auto c = send(operation::chat_completions, chat_body);
  w1.respond(0, 429, R"({"error":{"message":"slow down","type":"rate_limit_error"}})");
  run();
  CHECK(c.status() == 0);
  advance(100ms); // the retry finds no worker
  CHECK(c.status() == 429);
  CHECK(c.body()["error"]["message"] == "slow down");
  CHECK(w1.orders() == 1);
  CHECK(idle());
  // A worker's own error counts as the worker's, not the gateway's.
  CHECK(metric(R"(troupe_router_request_errors_total{error_type="too_many_requests"})") == -1);
}

TEST_CASE_METHOD(request_fixture,
                 "a response nobody knows the place of is looked up, and a request bound to "
                 "its worker is not retried on a status") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::responses_create,
                R"({"model":"m","previous_response_id":"resp_1","input":"more"})");
  // No node knows where resp_1 is: the workers are asked in turn.
  REQUIRE(w1.orders() == 1);
  CHECK(w1.order().call.method == http::verb::get);
  CHECK(w1.order().call.target == "/v1/responses/resp_1");
  w1.respond(0, 404, "{}");
  run();
  REQUIRE(w2.orders() == 1);
  CHECK(w2.order().call.target == "/v1/responses/resp_1");
  w2.respond(0, 200, R"({"id":"resp_1"})");
  run();
  // w2 has it: the request goes there, preferred.
  REQUIRE(w2.orders() == 2);
  CHECK(w2.order(1).call.target == "/v1/responses");
  CHECK(regular_asked->asked.back().prefer == "w2");
  w2.respond(1, 503, R"({"error":{"message":"down"}})");
  run();
  CHECK(c.status() == 503); // at once: another worker would not have the response
  CHECK(w1.orders() == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a worker failing after the first byte ends the stream with an error "
                 "event, and is not retried") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions,
                R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})");
  w1.stream(0, {"data: {\"n\":1}\n\n"}, false);
  run();
  CHECK(c.reply->stream_status() == 200);
  w1.fail(0, exchange_status::broken, true);
  run();
  auto chunks = c.reply->chunks();
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0] == "data: {\"n\":1}\n\n");
  CHECK(chunks[1].find("bad_gateway") != std::string::npos);
  CHECK(c.reply->ended());
  CHECK(w2.orders() == 0);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture, "retries stop at --retry-max-retries") {
  cfg.retry.max_retries = 1;
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto& w3 = worker("w3");
  auto c = send(operation::chat_completions, chat_body);
  w1.fail(0, exchange_status::connect_failed);
  run();
  REQUIRE(w2.orders() == 1);
  w2.fail(0, exchange_status::connect_failed);
  run();
  CHECK(w3.orders() == 0);
  CHECK(c.status() == 502);
  CHECK(c.body()["error"]["code"] == "bad_gateway");
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a gateway out of file descriptors answers 503 out_of_resources in "
                 "the route's format and tries no other worker") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions, chat_body);
  w1.fail(0, exchange_status::no_resources);
  run();
  CHECK(w2.orders() == 0); // another worker would need a socket as much
  CHECK(c.status() == 503);
  CHECK(c.body()["error"]["code"] == "out_of_resources");
  CHECK(c.body()["error"]["type"] == "server_error");
  CHECK((*c.reply->full())[transport::http::field::retry_after] == "1");
  CHECK(metric(R"(troupe_router_request_errors_total{error_type="out_of_resources"})") == 1);

  auto m = send(operation::messages,
                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})");
  auto& picked = w1.orders() == 2 ? w1 : w2;
  REQUIRE(picked.orders() >= 1);
  picked.fail(picked.orders() - 1, exchange_status::no_resources);
  run();
  CHECK(m.status() == 503);
  CHECK(m.body()["type"] == "error");
  CHECK(m.body()["error"]["type"] == "overloaded_error");
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "past its deadline a request is not retried, and a timeout is 504") {
  cfg.request_timeout = 0s;
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions, chat_body);
  CHECK(w1.order().call.deadline == c.received); // the exchange carries the deadline
  w1.fail(0, exchange_status::connect_failed);
  run();
  CHECK(w2.orders() == 0);
  CHECK(c.status() == 502);

  auto d = send(operation::chat_completions, chat_body);
  w1.fail(1, exchange_status::timeout);
  run();
  CHECK(d.status() == 504);
  CHECK(d.body()["error"]["code"] == "gateway_timeout");
  CHECK(metric(R"(troupe_router_request_errors_total{error_type="gateway_timeout"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture, "a client that leaves cancels the exchange, and the request "
                                  "ends") {
  auto& w1 = worker("w1");
  auto c = send(operation::chat_completions, chat_body);
  REQUIRE(w1.orders() == 1);
  c.reply->disconnect();
  run();
  CHECK(w1.cancelled(0));
  CHECK(w1.order().ended);
  CHECK(idle());
  CHECK(c.status() == 0); // nobody to answer
  CHECK(metric(R"(troupe_router_request_errors_total{error_type="client_closed"})") == 1);
}

TEST_CASE_METHOD(request_fixture, "a client that leaves during a backoff gets no other worker") {
  auto& w1 = worker("w1");
  auto& w2 = worker("w2");
  auto c = send(operation::chat_completions, chat_body);
  w1.respond(0, 503, "{}");
  run();
  c.reply->disconnect();
  run();
  CHECK(idle());
  advance(100ms);
  CHECK(w2.orders() == 0);
}

TEST_CASE_METHOD(request_fixture,
                 "a model nobody serves is 404 and an invalid body 400, in the route's "
                 "format, before any policy is asked") {
  worker("w1");
  auto c = send(operation::chat_completions, R"({"model":"x","messages":[{"role":"user"}]})");
  CHECK(c.status() == 404);
  CHECK(c.body()["error"]["code"] == "model_not_found");
  auto d = send(operation::messages, R"({"model":"m","messages":[{"role":"user"}]})");
  CHECK(d.status() == 400);
  CHECK(d.body() == json::parse(R"({"type":"error","error":{"type":"invalid_request_error",
                                    "message":"max_tokens: Field required"}})"));
  CHECK(regular_asked->asked.empty());
  CHECK(idle());
}

// -- prefill/decode --

TEST_CASE_METHOD(request_fixture,
                 "a model served only by pairs goes to a prefill and a decode worker at "
                 "once, with the same bootstrap fields") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  auto c = send(operation::generate, generate_body);
  REQUIRE(p.orders() == 1);
  REQUIRE(d.orders() == 1);
  auto pb = json::parse(p.order().call.body.view());
  auto db = json::parse(d.order().call.body.view());
  CHECK(pb == db);
  CHECK(pb["bootstrap_host"] == "p1");
  CHECK(pb["bootstrap_port"].is_null());
  CHECK(pb["bootstrap_room"].is_number_unsigned());
  CHECK(pb["text"] == "hi");
  CHECK(prefill_asked->asked.at(0).role == worker_type::prefill);
  CHECK(decode_asked->asked.at(0).role == worker_type::decode);
  CHECK(regular_asked->asked.empty());

  d.respond(0, 200, R"({"text":"done"})");
  run();
  CHECK(c.status() == 0); // held until the prefill leg succeeded
  p.respond(0, 200, R"({"text":""})");
  run();
  CHECK(c.status() == 200);
  CHECK(c.body() == json{{"text", "done"}});
  CHECK(metric("troupe_pd_requests_total") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a failed prefill leg cancels the decode leg and the client gets one "
                 "error") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  auto c = send(operation::generate, generate_body);
  p.respond(0, 500, R"({"error":{"message":"out of memory"}})");
  run();
  CHECK(d.cancelled(0));
  CHECK(c.status() == 502);
  auto message = c.body()["error"]["message"].get<std::string>();
  CHECK(message.find("the prefill worker answered HTTP 500: out of memory") != std::string::npos);
  CHECK(metric(R"(troupe_pd_leg_failures_total{leg="prefill"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a prefill worker that cannot be reached is replaced by another pair") {
  auto& p1 = worker("p1", worker_type::prefill);
  auto& p2 = worker("p2", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  auto c = send(operation::generate, generate_body);
  p1.fail(0, exchange_status::connect_failed);
  run();
  CHECK(d.cancelled(0));
  REQUIRE(p2.orders() == 1);
  REQUIRE(d.orders() == 2);
  CHECK(prefill_asked->asked.at(1).exclude == std::vector<std::string>{"p1"});
  auto first = json::parse(d.order(0).call.body.view());
  auto second = json::parse(d.order(1).call.body.view());
  CHECK(second["bootstrap_host"] == "p2");
  CHECK(second["bootstrap_room"] != first["bootstrap_room"]); // fresh rooms
  p2.respond(0, 200, "{}");
  d.respond(1, 200, R"({"text":"ok"})");
  run();
  CHECK(c.status() == 200);
  CHECK(metric(R"(troupe_router_retries_total{reason="connect"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a decode worker's error answer reaches the client as it gave it") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  auto c = send(operation::generate, generate_body);
  d.respond(0, 400,
            R"({"error":{"message":"bad sampling params","type":"invalid_request_error"}})");
  run();
  CHECK(p.cancelled(0));
  CHECK(c.status() == 400);
  CHECK(c.body()["error"]["message"] == "bad sampling params");
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture, "a client that leaves a pair cancels both legs") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  auto c = send(operation::generate, generate_body);
  c.reply->disconnect();
  run();
  CHECK(p.cancelled(0));
  CHECK(d.cancelled(0));
  CHECK(idle());
  CHECK(metric(R"(troupe_router_request_errors_total{error_type="client_closed"})") == 1);
}

TEST_CASE_METHOD(request_fixture, "a pair refuses a batch larger than it injects rooms for") {
  worker("p1", worker_type::prefill);
  worker("d1", worker_type::decode);
  auto c = send(operation::chat_completions,
                R"({"model":"m","n":5000,"messages":[{"role":"user","content":"hi"}]})");
  CHECK(c.status() == 400);
  CHECK(prefill_asked->asked.empty());
  CHECK(idle());
}

namespace {

/// Marks `w` as a worker that said it runs vLLM (as its proxy learns at discovery).
void reports_vllm(const test::fake_worker& w) {
  auto r = std::make_shared<worker_report>();
  r->runtime = protocol::engine_runtime::vllm;
  w.entry()->live->report.store(std::move(r));
}

const std::string vllm_prefill_answer =
    R"({"id":"p","choices":[],"kv_transfer_params":{"do_remote_prefill":true,)"
    R"("remote_engine_id":"e","remote_block_ids":[1,2],"remote_host":"p1","remote_port":5600}})";

} // namespace

TEST_CASE_METHOD(request_fixture,
                 "a vLLM pair runs the prefill first, then the decode with the params "
                 "the prefill returned") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  reports_vllm(p);
  auto c = send(operation::chat_completions,
                R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,)"
                R"("max_tokens":9})");
  REQUIRE(p.orders() == 1);
  CHECK(d.orders() == 0); // the decode waits for the prefill's answer
  CHECK(p.order().call.body ==
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false,)"
        R"("max_tokens":1,"kv_transfer_params":{"do_remote_decode":true,)"
        R"("do_remote_prefill":false}})");
  CHECK(tracker->list(0ms)[0]["phase"] == "prefilling");
  p.respond(0, 200, vllm_prefill_answer);
  run();
  REQUIRE(d.orders() == 1);
  CHECK(d.order().call.body ==
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,)"
        R"("max_tokens":9,"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e",)"
        R"("remote_block_ids":[1,2],"remote_host":"p1","remote_port":5600}})");
  CHECK(tracker->list(0ms)[0]["phase"] == "decoding");
  CHECK(c.reply->chunks().empty());
  d.stream(0, {"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", "data: [DONE]\n\n"});
  run();
  CHECK(c.reply->stream_status() == 200);
  CHECK(c.reply->ended());
  CHECK(c.reply->chunks().size() == 2);
  CHECK(metric(R"(troupe_pd_kv_transfer_total{connector="NixlConnector",outcome="relayed"})") == 1);
  CHECK(metric(R"(troupe_pd_phase_duration_seconds_count{phase="prefill",runtime="vllm"})") == 1);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture, "a vLLM prefill that fails never reaches the decode worker") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  reports_vllm(p);
  auto c = send(operation::chat_completions, chat_body);
  p.respond(0, 500, R"({"error":{"message":"out of memory"}})");
  run();
  CHECK(d.orders() == 0);
  CHECK(c.status() == 502);
  CHECK(c.body()["error"]["message"].get<std::string>().find("prefill") != std::string::npos);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a client that leaves a vLLM pair during the prefill gets no decode") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  reports_vllm(p);
  auto c = send(operation::chat_completions, chat_body);
  c.reply->disconnect();
  run();
  CHECK(p.cancelled(0));
  CHECK(d.orders() == 0);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture, "a vLLM decode error after the prefill reaches the client in the "
                                  "route's format") {
  auto& p = worker("p1", worker_type::prefill);
  auto& d = worker("d1", worker_type::decode);
  reports_vllm(p);
  auto c = send(operation::messages,
                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})");
  p.respond(0, 200, vllm_prefill_answer);
  run();
  d.respond(0, 503, R"({"error":{"message":"KV read failed"}})");
  run();
  CHECK(c.status() == 503);
  CHECK(c.body()["type"] == "error");
  CHECK(c.body()["error"]["message"].get<std::string>().find("KV read failed") !=
        std::string::npos);
  CHECK(idle());
}

TEST_CASE_METHOD(request_fixture,
                 "a route vLLM does not serve in sequence is refused before a pick") {
  auto& p = worker("p1", worker_type::prefill);
  worker("d1", worker_type::decode);
  reports_vllm(p);
  auto c = send(operation::generate, generate_body);
  CHECK(c.status() == 400);
  CHECK(prefill_asked->asked.empty());
  CHECK(idle());
}
