#include "actors/worker_proxy.hpp"
#include "tests/fakes/actor_system.hpp"
#include "transport/collect_sink.hpp"
#include "transport/http_server.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using transport::exchange_result;
using transport::exchange_status;
using json = nlohmann::json;
namespace http = transport::http;

namespace {

/// A worker on a loopback port, answering each path with the status and body the test set.
/// Its io_context is the proxy's, run by the test between actor steps: no thread.
struct stub_worker {
  explicit stub_worker(boost::asio::io_context& ioc) : server(ioc, options(), handler()) {
    REQUIRE_FALSE(server.start());
  }

  static transport::server_options options() {
    transport::server_options o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.use_strands = false;
    return o;
  }

  transport::request_handler handler() {
    return [this](transport::request&& req, transport::inbound_status,
                  std::shared_ptr<transport::reply_channel> reply) {
      auto path = std::string(req.target());
      ++served[path];
      if (path == hold) {
        held = std::move(reply); // answered by `release`
        return;
      }
      auto it = answers.find(path);
      auto [status, body] = it != answers.end() ? it->second : std::pair{404u, std::string{}};
      transport::response res{static_cast<http::status>(status), 11};
      res.set(http::field::content_type, "application/json");
      res.body() = body;
      reply->respond(std::move(res));
    };
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server.port()); }

  /// Answers the request held back (its path was `hold`).
  void release(unsigned status, std::string body) {
    transport::response res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(body);
    hold.clear();
    std::exchange(held, nullptr)->respond(std::move(res));
  }

  std::string hold; ///< Requests for this path wait for `release`.
  std::shared_ptr<transport::reply_channel> held;

  std::map<std::string, std::pair<unsigned, std::string>> answers{
      {"/v1/models", {200, R"({"object":"list","data":[{"id":"m"}]})"}},
      {"/health", {200, "{}"}},
      {"/generate", {200, R"({"text":"ok"})"}},
  };
  std::map<std::string, int> served;
  transport::http_server server;
};

/// One worker proxy on a deterministic actor system, its worker a stub on loopback.
struct worker_proxy_fixture : test::actor_system_fixture {
  boost::asio::io_context ioc;
  stub_worker stub{ioc};
  worker_proxy_config cfg;
  std::shared_ptr<worker_live> live = std::make_shared<worker_live>();
  std::shared_ptr<std::vector<std::vector<std::string>>> discovered =
      std::make_shared<std::vector<std::vector<std::string>>>();
  worker_proxy_actor proxy;
  worker_channel_ptr channel;

  worker_proxy_fixture() {
    cfg.health_interval = 10s;
    cfg.health_jitter = 0; // checks exactly every interval (one case below jitters)
    cfg.health_failure_threshold = 2;
    cfg.health_success_threshold = 2;
    cfg.cb_failure_threshold = 2;
    cfg.cb_success_threshold = 1;
    cfg.cb_timeout = 30s;
    cfg.use_strands = false;
  }

  ~worker_proxy_fixture() {
    shutdown();
    stub.server.stop();
    ioc.restart();
    ioc.poll(); // what the stopped proxy's exchanges and the server left
  }

  /// Spawns the proxy of `spec` (the stub's URL when unset); `kept`: held until the end.
  void start(protocol::worker_spec spec = {}, bool kept = true) {
    if (spec.url.empty()) {
      spec.url = stub.url();
    }
    std::string why;
    auto checked = protocol::check(spec, why);
    REQUIRE(checked);
    auto seen = discovered;
    auto listener = sys.spawn([seen](worker_listener::pointer) -> worker_listener::behavior_type {
      return {[seen](models_atom, const std::string&, std::vector<std::string>& models) {
        seen->push_back(std::move(models));
      }};
    });
    keep(listener);
    auto link = make_worker_proxy(sys, ioc, "w-1", std::move(*checked), live, listener, cfg);
    proxy = link.proxy;
    channel = link.channel;
    if (kept) {
      keep(proxy);
    }
    settle([] { return false; }, 0);
  }

  /// Runs the actors and the sockets in turn until `done` holds (or `rounds` io events passed
  /// without it): every step is an event of one or the other, none is waited for by time.
  template <class Pred> bool settle(Pred done, int rounds = 200) {
    for (int i = 0;; ++i) {
      run();
      if (done() || i >= rounds) {
        return done();
      }
      if (ioc.stopped()) {
        ioc.restart();
      }
      ioc.run_one_for(std::chrono::milliseconds(200));
    }
  }

  /// The proxy's state, as the admin endpoint shows it.
  json state() {
    auto s = ask<std::string>(proxy, inspect_atom_v);
    REQUIRE(s);
    return json::parse(*s);
  }

  /// Moves the clock to the next health check and waits until the proxy counted it: its streak
  /// `field` (`checks_passed`, `checks_failed`) reads `value`.
  void next_check(const char* field, int value) {
    advance(cfg.health_interval);
    REQUIRE(settle([&] { return state()[field] == value; }));
  }

  /// Sends one request through the worker's channel; the outcome arrives in the answer.
  std::shared_ptr<std::optional<exchange_result>> dispatch_later(std::string target = "/generate") {
    dispatch_order order;
    order.id = next_order_id();
    order.call.method = http::verb::post;
    order.call.target = std::move(target);
    order.call.body = "{}";
    order.call.deadline = std::chrono::steady_clock::now() + 10s;
    order.sink = std::make_shared<transport::collect_sink>(1 << 16);
    auto answer = std::make_shared<std::optional<exchange_result>>();
    auto id = order.id;
    auto receiver = sys.spawn([answer, id](caf::event_based_actor* self) -> caf::behavior {
      return {[self, answer, id](done_atom, std::uint64_t order, exchange_result& r) {
        if (order == id) {
          *answer = std::move(r);
          self->quit();
        }
      }};
    });
    channel->start(std::move(order), receiver);
    return answer;
  }

  /// Sends one request through the worker's channel and waits for its outcome.
  exchange_result dispatch(std::string target = "/generate") {
    auto answer = dispatch_later(std::move(target));
    REQUIRE(settle([&] { return answer->has_value(); }));
    return **answer;
  }
};

} // namespace

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a new worker's models are discovered, then it is healthy on its first "
                 "check") {
  CHECK(live->health == health_state::unknown);
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  REQUIRE(discovered->size() == 1);
  CHECK(discovered->front() == std::vector<std::string>{"m"});
  CHECK(stub.served["/v1/models"] == 1);
  CHECK(stub.served["/health"] == 1);
  CHECK(state()["models"] == json{"m"});
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "with a jitter, the next check comes within the interval's share of "
                 "it, on the check grid") {
  cfg.health_jitter = 0.2; // 10 s: from 8 s to 12 s after a check, then the next 100 ms
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  REQUIRE(stub.served["/health"] == 1);
  // The check of the start was scheduled while discovery ran: its follow-up comes at 1 s.
  advance(1s);
  REQUIRE(settle([&] { return stub.served["/health"] == 2; }));
  advance(7999ms);
  settle([] { return false; }, 3);
  CHECK(stub.served["/health"] == 2); // not before 8 s
  advance(4101ms + 1ms);              // 12.1 s after the last check, and one more
  REQUIRE(settle([&] { return stub.served["/health"] == 3; }));
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a self-hosted worker without /v1/models is asked /get_model_info") {
  stub.answers.erase("/v1/models");
  stub.answers["/get_model_info"] = {200, R"({"model_path":"org/llama"})"};
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  CHECK(discovered->front() == std::vector<std::string>{"org/llama"});
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a worker whose models cannot be discovered never becomes routable") {
  stub.answers.erase("/v1/models");
  start();
  REQUIRE(settle([&] { return state()["checks_failed"] == 1; }));
  CHECK(discovered->empty());
  CHECK_FALSE(live->routable());
  stub.answers["/v1/models"] = {200, R"({"data":[{"id":"m"}]})"};
  advance(cfg.health_interval); // the next check discovers again
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  CHECK(discovered->size() == 1);
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "while no model is known, discovery is asked again from 1 s, doubling, "
                 "and the worker is healthy on the check that finds one") {
  stub.answers.erase("/v1/models"); // the engine is still loading: nothing lists a model
  start();
  REQUIRE(settle([&] { return state()["checks_failed"] == 1; }));
  advance(1s); // not the health interval (10 s): the first retry
  REQUIRE(settle([&] { return state()["checks_failed"] == 2; }));
  CHECK(live->health == health_state::unhealthy); // the threshold (2) counts failed discoveries
  CHECK_FALSE(live->routable());
  stub.answers["/v1/models"] = {200, R"({"data":[{"id":"m"}]})"};
  advance(1s); // the next retry is 2 s after the last: not yet
  run();
  CHECK(discovered->empty());
  advance(1s);
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  CHECK(discovered->size() == 1);
  CHECK(live->routable()); // without waiting for the success threshold (2) of a failed worker
  CHECK(stub.served["/v1/models"] >= 1);
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "health follows the thresholds: unhealthy after the failures, healthy "
                 "again after the successes") {
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/health"] = {503, "{}"};
  next_check("checks_failed", 1);
  CHECK(live->health == health_state::healthy); // one failure is below the threshold
  next_check("checks_failed", 2);
  CHECK(live->health == health_state::unhealthy);
  CHECK_FALSE(live->routable());
  stub.answers["/health"] = {200, "{}"};
  next_check("checks_passed", 1);
  CHECK(live->health == health_state::unhealthy); // one success is below its threshold
  next_check("checks_passed", 2);
  CHECK(live->health == health_state::healthy);
  CHECK(live->routable());
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "the breaker opens after consecutive failures, half-opens after its "
                 "timeout and closes on a success") {
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/generate"] = {500, R"({"error":"boom"})"};
  CHECK(dispatch().http_status == 500);
  CHECK(live->breaker == breaker_state::closed);
  CHECK(state()["cb_failures"] == 1);
  CHECK(dispatch().http_status == 500);
  CHECK(live->breaker == breaker_state::open);
  CHECK_FALSE(live->routable());
  CHECK(live->failures == 2);
  CHECK(live->in_flight == 0);

  advance(cfg.cb_timeout - 1ms);
  CHECK(live->breaker == breaker_state::open);
  advance(1ms);
  CHECK(live->breaker == breaker_state::half_open);
  CHECK(live->routable()); // requests may probe it again
  stub.answers["/generate"] = {200, "{}"};
  CHECK(dispatch().http_status == 200);
  CHECK(live->breaker == breaker_state::closed);
  CHECK(live->requests == 3);
}

TEST_CASE_METHOD(worker_proxy_fixture, "a failure while half-open opens the breaker again") {
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/generate"] = {502, "{}"};
  dispatch();
  dispatch();
  REQUIRE(live->breaker == breaker_state::open);
  advance(cfg.cb_timeout);
  REQUIRE(live->breaker == breaker_state::half_open);
  dispatch();
  CHECK(live->breaker == breaker_state::open);
}

TEST_CASE_METHOD(worker_proxy_fixture, "client errors and a disabled breaker never open it") {
  cfg.cb_enabled = false;
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/generate"] = {400, "{}"};
  dispatch();
  dispatch();
  CHECK(live->failures == 0); // a 400 is the client's
  stub.answers["/generate"] = {500, "{}"};
  dispatch();
  dispatch();
  dispatch();
  CHECK(live->failures == 3);
  CHECK(live->breaker == breaker_state::closed);
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a worker that cannot be reached fails its checks and its requests") {
  std::uint16_t port;
  {
    boost::asio::ip::tcp::acceptor a{ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}};
    port = a.local_endpoint().port();
  }
  protocol::worker_spec spec;
  spec.url = "http://127.0.0.1:" + std::to_string(port);
  spec.model_id = "m"; // named: no discovery, the first check is the health endpoint
  start(spec);
  REQUIRE(settle([&] { return state()["checks_failed"] == 1; }));
  CHECK(live->health == health_state::unknown);
  CHECK(dispatch().status == exchange_status::connect_failed);
  CHECK(dispatch().status == exchange_status::connect_failed);
  CHECK(live->breaker == breaker_state::open);
  CHECK(live->in_flight == 0);
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a drained proxy that nothing refers to ends, its timers pending") {
  auto before = sys.registry().running();
  start({}, false);
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/generate"] = {500, "{}"};
  dispatch();
  dispatch();
  REQUIRE(live->breaker == breaker_state::open); // a half-open timer and a health check due
  auto weak = caf::actor_cast<caf::weak_actor_ptr>(proxy);
  caf::anon_send(proxy, drain_atom_v);
  proxy = worker_proxy_actor{};
  REQUIRE(settle([&] { return caf::actor_cast<caf::strong_actor_ptr>(weak) == nullptr; }, 20));
  advance(cfg.cb_timeout); // the timers fire into nothing
  CHECK(live->breaker == breaker_state::open);
  CHECK(sys.registry().running() == before + 1); // the listener only: nothing waits any more
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a drained proxy closes the connection of its last request in flight "
                 "once that request ends") {
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.hold = "/generate";
  auto answer = dispatch_later();
  REQUIRE(settle([&] { return stub.held != nullptr; }));
  CHECK(live->in_flight == 1);
  caf::anon_send(proxy, drain_atom_v);
  run();
  CHECK(state()["draining"] == true);
  stub.release(200, R"({"text":"ok"})");
  REQUIRE(settle([&] { return answer->has_value(); }));
  CHECK((*answer)->http_status == 200); // a removed worker's request finishes
  CHECK(live->in_flight == 0);
  // The connection went back to the pool when the response ended; the proxy, told that the
  // last request ended, closed it.
  REQUIRE(settle([&] { return state()["pool_idle"] == 0; }));
  CHECK(state()["pool_connections"] == 0);
}

TEST_CASE_METHOD(worker_proxy_fixture,
                 "a success while the breaker is closed resets the failure streak") {
  start();
  REQUIRE(settle([&] { return live->health == health_state::healthy; }));
  stub.answers["/generate"] = {500, "{}"};
  dispatch();
  CHECK(state()["cb_failures"] == 1);
  stub.answers["/generate"] = {200, "{}"};
  dispatch();
  CHECK(state()["cb_failures"] == 0);
  stub.answers["/generate"] = {500, "{}"};
  dispatch(); // one failure after a success: below the threshold of 2
  CHECK(live->breaker == breaker_state::closed);
  dispatch();
  CHECK(live->breaker == breaker_state::open);
}
