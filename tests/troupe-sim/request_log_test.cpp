#include "apps/troupe-sim/request_log.hpp"

#include <catch2/catch.hpp>

using namespace troupe::sim;
namespace http = troupe::transport::http;

namespace {

troupe::transport::request make(std::string target, std::string body) {
  troupe::transport::request req{http::verb::post, target, 11};
  req.set("X-Routing-Key", "abc");
  req.set(http::field::content_type, "application/json");
  req.body() = std::move(body);
  return req;
}

} // namespace

TEST_CASE("the log keeps method, target, lowercased headers, body and parsed JSON",
          "[request_log]") {
  request_log log{10};
  log.record(make("/v1/chat/completions?x=1", R"({"model":"m"})"), 12.5);
  log.record(make("/generate", "not json"), 13.0);
  auto j = log.to_json()["requests"];
  REQUIRE(j.size() == 2);
  CHECK(j[0]["method"] == "POST");
  CHECK(j[0]["path"] == "/v1/chat/completions?x=1");
  CHECK(j[0]["headers"]["x-routing-key"] == "abc");
  CHECK(j[0]["body"] == R"({"model":"m"})");
  CHECK(j[0]["json"]["model"] == "m");
  CHECK(j[0]["time"] == 12.5);
  CHECK(j[1]["json"].is_null());
}

TEST_CASE("the log is bounded and can be cleared", "[request_log]") {
  request_log log{3};
  for (int i = 0; i < 5; ++i) {
    log.record(make("/r" + std::to_string(i), "{}"), i);
  }
  auto j = log.to_json()["requests"];
  REQUIRE(j.size() == 3);
  CHECK(j[0]["path"] == "/r2");
  log.clear();
  CHECK(log.size() == 0);

  request_log off{0};
  off.record(make("/x", "{}"), 0);
  CHECK(off.size() == 0);
}
