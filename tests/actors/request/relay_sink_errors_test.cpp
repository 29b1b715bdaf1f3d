// relay_sink: worker error bodies, the size limit on them, hop-by-hop headers, observers.

#include "actors/request/relay_sink.hpp"
#include "tests/fakes/recording_reply.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::actors;
namespace http = transport::http;
using json = nlohmann::json;

namespace {

http::response_header<> error_head(unsigned status, std::string content_type) {
  http::response_header<> h;
  h.result(status);
  h.set(http::field::content_type, content_type);
  return h;
}

} // namespace

TEST_CASE("a worker error in the route's format is relayed unchanged with its status") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::anthropic, 1 << 20};
  std::string body = R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})";
  REQUIRE(sink.on_head(error_head(529, "application/json")));
  REQUIRE(sink.on_body(body));
  sink.on_complete();
  auto res = reply->full();
  REQUIRE(res);
  CHECK(res->result_int() == 529);
  CHECK(res->body() == body);
  CHECK(sink.answered());
}

TEST_CASE("a foreign worker error is answered in the route's format") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::anthropic, 1 << 20};
  REQUIRE(sink.on_head(error_head(400, "application/json")));
  REQUIRE(sink.on_body(R"({"object":"error","message":"prompt too long"})"));
  sink.on_complete();
  auto res = reply->full();
  REQUIRE(res);
  CHECK(res->result_int() == 400);
  auto j = json::parse(res->body());
  CHECK(j["type"] == "error");
  CHECK(j["error"]["type"] == "invalid_request_error");
  CHECK(j["error"]["message"] == "the worker answered 400: prompt too long");
  CHECK((*res)[http::field::content_type] == "application/json");
}

TEST_CASE("an error body over its limit is cut while reading, on a character boundary") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1 << 20, 10};
  auto h = error_head(500, "text/plain");
  h.set(http::field::content_length, "1000000"); // larger than the limit: still read, cut
  REQUIRE(sink.on_head(h));
  REQUIRE(sink.on_body("12345678"));
  // The limit falls inside the second '€': the piece is refused and the answer is sent.
  CHECK_FALSE(sink.on_body("\xE2\x82\xAC\xE2\x82\xAC tail"));
  CHECK(sink.answered());
  auto res = reply->full();
  REQUIRE(res);
  CHECK(res->result_int() == 500);
  auto j = json::parse(res->body());
  CHECK(j["error"]["message"] == "the worker answered 500: 12345678 [truncated]");
  CHECK(j["error"]["type"] == "server_error");
  // A failure reported afterwards (the exchange ends `rejected`) changes nothing.
  sink.fail({protocol::error_code::upstream_too_large, "too large", {}});
  CHECK(reply->full()->result_int() == 500);
}

TEST_CASE("headers the Connection header names are hop-by-hop and dropped") {
  http::response_header<> h = error_head(200, "application/json");
  h.set(http::field::connection, "keep-alive, X-Hop");
  h.set("x-hop", "secret");
  h.set("x-kept", "1");
  h.set(http::field::keep_alive, "timeout=5");
  h.set(http::field::upgrade, "h2c");
  auto out = relayable_headers(h);
  auto has = [&](std::string_view n) {
    return std::any_of(out.begin(), out.end(), [&](auto& f) { return f.first == n; });
  };
  CHECK(has("x-kept"));
  CHECK(has("Content-Type"));
  CHECK_FALSE(has("x-hop"));
  CHECK_FALSE(has("Keep-Alive"));
  CHECK_FALSE(has("Upgrade"));
  CHECK_FALSE(has("Connection"));
}

TEST_CASE("an observer sees a success body and every stream event, never errors") {
  std::vector<std::string> seen;
  auto observe = [&](std::string_view p) { seen.emplace_back(p); };
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink body_sink{reply, "rid", protocol::api_format::openai, 1024, 1024, observe};
  REQUIRE(body_sink.on_head(error_head(200, "application/json")));
  REQUIRE(body_sink.on_body("{\"id\":1}"));
  body_sink.on_complete();
  relay_sink stream_sink{reply, "rid", protocol::api_format::openai, 1024, 1024, observe};
  REQUIRE(stream_sink.on_head(error_head(200, "text/event-stream")));
  REQUIRE(stream_sink.on_body("data: a\n\ndata: b\n\n"));
  relay_sink error_sink{reply, "rid", protocol::api_format::openai, 1024, 1024, observe};
  REQUIRE(error_sink.on_head(error_head(404, "application/json")));
  REQUIRE(error_sink.on_body("{}"));
  error_sink.on_complete();
  CHECK(seen == std::vector<std::string>{"{\"id\":1}", "data: a\n\n", "data: b\n\n"});
}

TEST_CASE("a held retryable error reaches the client only when released, as it would have") {
  for (unsigned status : {408u, 429u, 500u, 502u, 503u, 504u}) {
    auto reply = std::make_shared<test::recording_reply>();
    relay_sink sink{reply, "rid", protocol::api_format::anthropic, 1 << 20};
    sink.hold_retryable_errors();
    // Even an error that calls itself a stream is read whole, not relayed.
    REQUIRE(
        sink.on_head(error_head(status, status == 503 ? "text/event-stream" : "application/json")));
    REQUIRE(sink.on_body(R"({"object":"error","message":"busy"})"));
    sink.on_complete();
    CHECK(sink.held());
    CHECK_FALSE(sink.started());
    CHECK_FALSE(reply->full());
    CHECK(reply->stream_status() == 0);
    sink.release_held();
    auto res = reply->full();
    REQUIRE(res);
    CHECK(res->result_int() == status);
    auto j = json::parse(res->body());
    CHECK(j["type"] == "error");
    CHECK(j["error"]["message"] == "the worker answered " + std::to_string(status) + ": busy");
    CHECK_FALSE(sink.held());
    sink.release_held(); // once
  }
}

TEST_CASE("holding keeps back only the retryable statuses") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1 << 20};
  sink.hold_retryable_errors();
  REQUIRE(sink.on_head(error_head(400, "application/json")));
  REQUIRE(sink.on_body(R"({"error":{"message":"bad"}})"));
  sink.on_complete();
  CHECK_FALSE(sink.held());
  REQUIRE(reply->full());
  CHECK(reply->full()->result_int() == 400);
}

TEST_CASE("a held error cut at its size limit is released cut") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1 << 20, 10};
  sink.hold_retryable_errors();
  REQUIRE(sink.on_head(error_head(503, "text/plain")));
  CHECK_FALSE(sink.on_body("overloaded, try again in a while"));
  CHECK(sink.held());
  CHECK_FALSE(reply->full());
  sink.release_held();
  REQUIRE(reply->full());
  auto j = json::parse(reply->full()->body());
  CHECK(j["error"]["message"].get<std::string>().find("overloaded") != std::string::npos);
}
