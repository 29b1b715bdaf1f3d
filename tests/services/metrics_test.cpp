#include "services/metrics.hpp"
#include "tests/fakes/scrape.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::services;
using namespace std::chrono_literals;

using test::count_lines;
using test::sample;

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
