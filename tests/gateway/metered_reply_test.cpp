#include "gateway/metered_reply.hpp"
#include "services/metrics.hpp"
#include "tests/fakes/recording_reply.hpp"
#include "tests/fakes/scrape.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::gateway;
using test::sample;

TEST_CASE("a metered reply counts each response once, with its status and route") {
  auto m = std::make_shared<services::metrics>();
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
