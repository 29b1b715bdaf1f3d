#include "apps/troupe-bench/stage_stats.hpp"

#include <catch2/catch.hpp>

using namespace troupe::bench;
using std::chrono::milliseconds;

namespace {

// A streamed request due at `due`: its first token `ttft` later, then `tokens − 1` more
// `itl` apart, the end at the last token.
request_record streamed(bench_clock::time_point due, milliseconds ttft, milliseconds itl,
                        int tokens, std::size_t target = 0) {
  request_record r;
  r.target = target;
  r.scheduled = due;
  r.sent = due + milliseconds(1);
  r.streamed = true;
  r.first_token = due + ttft;
  r.token_events = tokens;
  for (int i = 1; i < tokens; ++i) {
    r.gaps_ms.push_back(static_cast<float>(itl.count()));
  }
  r.end = r.first_token + itl * (tokens - 1);
  r.counts.output_tokens = tokens;
  r.counts.prompt_tokens = 100;
  r.counts.cached_tokens = 80;
  return r;
}

stage_spec rate_stage() {
  return {true, 10, 0};
}

} // namespace

TEST_CASE("known latencies come out as measured", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://a"}};
  for (int i = 0; i < 10; ++i) {
    stats.add(streamed(t0 + milliseconds(100 * i), milliseconds(50), milliseconds(10), 20));
  }
  auto s = stats.summarize(rate_stage());
  CHECK(s.requests == 10);
  CHECK(s.ok == 10);
  CHECK(s.failed == 0);
  CHECK(s.ttft.p50 == Approx(50));
  CHECK(s.ttft.count == 10);
  CHECK(s.itl.p50 == Approx(10));
  CHECK(s.itl.count == 190);
  CHECK(s.tpot.p50 == Approx(10));
  CHECK(s.e2e.p50 == Approx(50 + 19 * 10));
  CHECK(s.e2e.p99 == Approx(240));
  CHECK(s.wait.p50 == Approx(1));
  // The last request ends 900 + 240 ms after the window opened.
  CHECK(s.duration_s == Approx(1.14));
  CHECK(s.request_rate == Approx(10 / 1.14));
  CHECK(s.output_tokens == 200);
  CHECK(s.output_rate == Approx(200 / 1.14));
  CHECK(s.cache_hit_rate == Approx(0.8));
}

TEST_CASE("latency is counted from the due time, so waiting counts", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://a"}};
  auto r = streamed(t0, milliseconds(50), milliseconds(10), 2);
  r.sent = t0 + milliseconds(30); // waited 30 ms for a connection
  stats.add(r);
  auto s = stats.summarize(rate_stage());
  CHECK(s.wait.p50 == Approx(30));
  CHECK(s.ttft.p50 == Approx(50));
  CHECK(s.e2e.p50 == Approx(60));
}

TEST_CASE("failures are counted by reason and left out of the latencies", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://a", "http://b"}};
  stats.add(streamed(t0, milliseconds(50), milliseconds(10), 5, 0));
  auto bad = streamed(t0, milliseconds(1), milliseconds(1), 1, 1);
  bad.result = outcome::http_error;
  bad.status = 503;
  bad.detail = "HTTP 503: busy";
  stats.add(bad);
  auto cut = streamed(t0, milliseconds(1), milliseconds(1), 1, 1);
  cut.result = outcome::stream_error;
  stats.add(cut);
  auto s = stats.summarize(rate_stage());
  CHECK(s.requests == 3);
  CHECK(s.ok == 1);
  CHECK(s.failed == 2);
  CHECK(s.failures.at("http_503") == 1);
  CHECK(s.failures.at("stream_error") == 1);
  REQUIRE(s.first_errors.size() == 2);
  CHECK(s.first_errors[0].find("HTTP 503: busy") != std::string::npos);
  CHECK(s.ttft.count == 1);
  CHECK(s.e2e.count == 1);
  CHECK(s.targets[0].requests == 1);
  CHECK(s.targets[0].ok == 1);
  CHECK(s.targets[1].requests == 2);
  CHECK(s.targets[1].ok == 0);
}

TEST_CASE("warm-up requests are not measured", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://a"}};
  auto early = streamed(t0 - milliseconds(500), milliseconds(900), milliseconds(10), 3);
  early.measured = false;
  stats.add(early);
  stats.add(streamed(t0, milliseconds(50), milliseconds(10), 3));
  auto s = stats.summarize(rate_stage());
  CHECK(s.warmup == 1);
  CHECK(s.requests == 1);
  CHECK(s.ttft.max == Approx(50));
}

TEST_CASE("a non-streamed request has an end-to-end latency only", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://a"}};
  request_record r;
  r.scheduled = t0;
  r.sent = t0;
  r.end = t0 + milliseconds(240);
  r.counts.output_tokens = 20;
  stats.add(r);
  auto s = stats.summarize(rate_stage());
  CHECK(s.e2e.p50 == Approx(240));
  CHECK(s.ttft.count == 0);
  CHECK(s.itl.count == 0);
  CHECK(s.tpot.count == 0);
  CHECK(s.output_tokens == 20);
  CHECK(s.cache_hit_rate == -1);
}

TEST_CASE("merged loops equal one loop that saw every request", "[stage_stats]") {
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats one{t0, {"http://a", "http://b"}};
  stage_stats a{t0, {"http://a", "http://b"}};
  stage_stats b{t0, {"http://a", "http://b"}};
  for (int i = 0; i < 20; ++i) {
    auto r = streamed(t0 + milliseconds(7 * i), milliseconds(40 + i), milliseconds(5 + i % 3),
                      3 + i % 4, i % 2);
    one.add(r);
    (i % 3 ? a : b).add(r);
  }
  a.merge(b);
  auto x = one.summarize(rate_stage());
  auto y = a.summarize(rate_stage());
  CHECK(x.requests == y.requests);
  CHECK(x.duration_s == Approx(y.duration_s));
  CHECK(x.ttft.p90 == Approx(y.ttft.p90));
  CHECK(x.itl.p99 == Approx(y.itl.p99));
  CHECK(x.e2e.mean == Approx(y.e2e.mean));
  CHECK(x.targets[1].requests == y.targets[1].requests);
  CHECK(x.targets[1].ttft.p90 == Approx(y.targets[1].ttft.p90));
  CHECK(x.targets[0].e2e.p50 == Approx(y.targets[0].e2e.p50));
  CHECK(x.output_tokens == y.output_tokens);
}

TEST_CASE("each target has its own TTFT and end-to-end latency", "[stage_stats]") {
  // A worker directly (20 ms to the first token) and through a gateway (23 ms), in one stage:
  // the per-target figures tell them apart where the stage's mix cannot.
  const auto t0 = bench_clock::time_point{} + std::chrono::hours(1);
  stage_stats stats{t0, {"http://direct", "http://gateway"}};
  for (int i = 0; i < 40; ++i) {
    const auto ttft = milliseconds(i % 2 ? 23 : 20);
    stats.add(streamed(t0 + milliseconds(10 * i), ttft, milliseconds(5), 4, i % 2));
  }
  auto failed = streamed(t0, milliseconds(1), milliseconds(1), 2, 1);
  failed.result = outcome::http_error;
  failed.status = 503;
  stats.add(failed);
  auto s = stats.summarize(rate_stage());
  REQUIRE(s.targets.size() == 2);
  CHECK(s.targets[0].ttft.count == 20);
  CHECK(s.targets[0].ttft.p99 == Approx(20));
  CHECK(s.targets[1].ttft.count == 20); // the failure counts in neither latency
  CHECK(s.targets[1].ttft.p50 == Approx(23));
  CHECK(s.targets[1].e2e.p50 == Approx(23 + 3 * 5));
  CHECK(s.ttft.p50 == Approx(21.5));
}
