#include "actors/fleet.hpp"
#include "actors/metered_reply.hpp"
#include "actors/metrics.hpp"
#include "tests/fakes/recording_reply.hpp"

#include <catch2/catch.hpp>
#include <sstream>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;

namespace {

/// The value of the sample `series` (name and labels exactly as exposed), or -1 if absent.
double sample(const std::string& scrape, const std::string& series) {
  std::istringstream in{scrape};
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

std::size_t count_lines(const std::string& scrape, const std::string& prefix) {
  std::istringstream in{scrape};
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    n += line.compare(0, prefix.size(), prefix) == 0;
  }
  return n;
}

} // namespace

TEST_CASE("router metrics count requests, errors and streamed ttft by label") {
  metrics m;
  request_outcome ok{"chat_completions", "llama", true, "", 20ms};
  m.on_request_end(ok);
  m.on_request_end(ok);
  m.on_request_end({"generate", "none", false, "bad_gateway", std::nullopt});
  auto text = m.scrape();
  CHECK(
      sample(
          text,
          R"(troupe_router_requests_total{endpoint="chat_completions",model="llama",streaming="true"})") ==
      2);
  CHECK(
      sample(
          text,
          R"(troupe_router_requests_total{endpoint="generate",model="none",streaming="false"})") ==
      1);
  CHECK(sample(text, R"(troupe_router_request_errors_total{error_type="bad_gateway"})") == 1);
  CHECK(sample(text, R"(troupe_router_ttft_seconds_count{model="llama"})") == 2);
  CHECK(sample(text, R"(troupe_router_ttft_seconds_bucket{model="llama",le="0.025"})") == 2);
  CHECK(sample(text, R"(troupe_router_ttft_seconds_bucket{model="llama",le="0.01"})") == 0);
  CHECK(sample(text, R"(troupe_router_ttft_seconds_count{model="none"})") == -1);
}

TEST_CASE("label sets beyond the cap count under other") {
  metrics m;
  for (int i = 0; i < 600; ++i) {
    m.on_request_end({"completions", "model-" + std::to_string(i), false, "", std::nullopt});
  }
  auto text = m.scrape();
  CHECK(count_lines(text, "troupe_router_requests_total{") == 513);
  CHECK(
      sample(text,
             R"(troupe_router_requests_total{endpoint="other",model="other",streaming="other"})") ==
      88);
}

TEST_CASE("pd, cluster and mailbox metrics have their fixed series") {
  metrics m;
  m.on_pd_request();
  m.on_pd_leg_failure(protocol::worker_type::decode);
  m.on_pd_leg_failure(protocol::worker_type::decode);
  m.set_cluster_members(3, 1, 0);
  m.on_cluster_propagation(40ms);
  m.set_mailbox_size("registry", 7);
  auto text = m.scrape();
  CHECK(sample(text, "troupe_pd_requests_total") == 1);
  CHECK(sample(text, R"(troupe_pd_leg_failures_total{leg="decode"})") == 2);
  CHECK(sample(text, R"(troupe_pd_leg_failures_total{leg="prefill"})") == 0);
  CHECK(sample(text, R"(troupe_cluster_members{state="up"})") == 3);
  CHECK(sample(text, R"(troupe_cluster_members{state="suspect"})") == 1);
  CHECK(sample(text, "troupe_cluster_propagation_seconds_count") == 1);
  CHECK(sample(text, R"(troupe_actor_mailbox_size{actor="registry"})") == 7);
  m.forget_actor("registry");
  CHECK(sample(m.scrape(), R"(troupe_actor_mailbox_size{actor="registry"})") == -1);
}

TEST_CASE("worker gauges are read from the fleet snapshot when scraped") {
  auto view = std::make_shared<fleet_view>();
  auto snap = std::make_shared<fleet_snapshot>();
  auto w = std::make_shared<worker_entry>();
  w->id = "w-1";
  w->spec.url = "http://10.0.0.1:8000";
  w->live = std::make_shared<worker_live>();
  snap->workers.push_back(w);
  view->set(snap);
  metrics m{view};
  auto text = m.scrape();
  const std::string lbl = R"({worker="http://10.0.0.1:8000"})";
  CHECK(sample(text, "troupe_worker_requests_active" + lbl) == 0);
  CHECK(sample(text, "troupe_worker_health" + lbl) == 0);
  CHECK(sample(text, "troupe_worker_cb_state" + lbl) == 0);

  w->live->in_flight = 4;
  w->live->health = health_state::healthy;
  w->live->breaker = breaker_state::half_open;
  text = m.scrape();
  CHECK(sample(text, "troupe_worker_requests_active" + lbl) == 4);
  CHECK(sample(text, "troupe_worker_health" + lbl) == 1);
  CHECK(sample(text, "troupe_worker_cb_state" + lbl) == 2);

  view->set(std::make_shared<fleet_snapshot>()); // removed: its series go with it
  CHECK(sample(m.scrape(), "troupe_worker_requests_active" + lbl) == -1);
}

TEST_CASE("a metered reply counts each response once, with its status and route") {
  auto m = std::make_shared<metrics>();
  auto start = std::chrono::steady_clock::now();
  const std::string route = "/v1/chat/completions";
  {
    auto inner = std::make_shared<test::recording_reply>();
    auto reply = make_metered_reply(inner, m, "POST", route, start);
    transport::response res{transport::http::status::not_found, 11};
    reply->respond(std::move(res));
    CHECK(inner->full()->result_int() == 404);
  }
  {
    auto inner = std::make_shared<test::recording_reply>();
    auto reply = make_metered_reply(inner, m, "POST", route, start);
    reply->begin_stream(200, {});
    reply->write_chunk("data: x\n\n");
    reply->end_stream();
    CHECK(inner->chunks().size() == 1);
  }
  {
    // Released without an answer: the client left.
    auto inner = std::make_shared<test::recording_reply>();
    auto reply = make_metered_reply(inner, m, "POST", route, start);
  }
  auto text = m->scrape();
  auto series = [&](const char* status) {
    return R"(troupe_http_requests_total{method="POST",path="/v1/chat/completions",status_code=")" +
           std::string(status) + "\"}";
  };
  CHECK(sample(text, series("404")) == 1);
  CHECK(sample(text, series("200")) == 1);
  CHECK(sample(text, series("499")) == 1);
  CHECK(
      sample(
          text,
          R"(troupe_http_request_duration_seconds_count{method="POST",path="/v1/chat/completions"})") ==
      3);
}
