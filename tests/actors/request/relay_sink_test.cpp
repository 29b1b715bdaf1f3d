#include "actors/request/relay_sink.hpp"
#include "tests/fakes/recording_reply.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::actors;
namespace http = transport::http;

namespace {

http::response_header<> worker_head(unsigned status, std::string content_type) {
  http::response_header<> h;
  h.result(status);
  h.set(http::field::content_type, content_type);
  h.set(http::field::connection, "keep-alive");
  h.set("x-custom", "kept");
  return h;
}

} // namespace

TEST_CASE("a JSON response is relayed whole with the worker's status and headers") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1024};
  REQUIRE(sink.on_head(worker_head(201, "application/json")));
  REQUIRE(sink.on_body("{\"a\":"));
  REQUIRE(sink.on_body("1}"));
  CHECK_FALSE(reply->full());
  sink.on_complete();
  auto res = reply->full();
  REQUIRE(res);
  CHECK(res->result_int() == 201);
  CHECK(res->body() == "{\"a\":1}");
  CHECK((*res)["x-custom"] == "kept");
  CHECK((*res)["x-request-id"] == "rid");
  CHECK((*res)[http::field::connection].empty());
  CHECK(sink.started());
}

TEST_CASE("an SSE response is relayed event by event, never a partial event") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1024};
  REQUIRE(sink.on_head(worker_head(200, "Text/Event-Stream")));
  CHECK(sink.streaming());
  CHECK(reply->stream_status() == 200);
  REQUIRE(sink.on_body("data: 1\n\ndata: "));
  REQUIRE(sink.on_body("2\n\n"));
  REQUIRE(sink.on_body("data: [DONE]\n\n"));
  sink.on_complete();
  CHECK(reply->chunks() ==
        std::vector<std::string>{"data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"});
  CHECK(reply->ended());
}

TEST_CASE("a failure mid-stream ends the stream with an error event in the API's format") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::anthropic, 1024};
  REQUIRE(sink.on_head(worker_head(200, "text/event-stream")));
  REQUIRE(sink.on_body("event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {\"x"));
  sink.fail({protocol::error_code::bad_gateway, "worker died", {}});
  auto chunks = reply->chunks();
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0] == "event: message_start\ndata: {}\n\n");
  auto ev = protocol::parse_sse_event(chunks[1]);
  CHECK(ev.event == "error");
  CHECK(nlohmann::json::parse(ev.data)["error"]["type"] == "api_error");
  CHECK(reply->ended());
}

TEST_CASE("a failure before anything was sent becomes an error response") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1024};
  sink.fail({protocol::error_code::gateway_timeout, "too slow", {}});
  auto res = reply->full();
  REQUIRE(res);
  CHECK(res->result_int() == 504);
  CHECK(nlohmann::json::parse(res->body())["error"]["code"] == "gateway_timeout");
}

TEST_CASE("bodies over the limit are refused while reading") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 8};
  REQUIRE(sink.on_head(worker_head(200, "application/json")));
  CHECK(sink.on_body("12345"));
  CHECK_FALSE(sink.on_body("6789"));
  auto big = worker_head(200, "application/json");
  big.set(http::field::content_length, "100");
  relay_sink sink2{reply, "rid", protocol::api_format::openai, 8};
  CHECK_FALSE(sink2.on_head(big));
}

namespace {

/// A flow source that only counts.
struct counting_source final : transport::flow_source {
  void pause() override { ++pauses; }
  void resume() override { ++resumes; }
  int pauses = 0;
  int resumes = 0;
};

} // namespace

TEST_CASE("a stream's client is given the exchange as its flow source; a whole body's is not") {
  auto source = std::make_shared<counting_source>();
  auto streamed = std::make_shared<test::recording_reply>();
  relay_sink stream_sink{streamed, "rid", protocol::api_format::openai, 1024};
  stream_sink.on_source(source);
  REQUIRE(stream_sink.on_head(worker_head(200, "text/event-stream")));
  CHECK(streamed->flow_source() == source);

  // A non-streamed body is read whole up to its size limit: nothing to pace.
  auto whole = std::make_shared<test::recording_reply>();
  relay_sink whole_sink{whole, "rid", protocol::api_format::openai, 1024};
  whole_sink.on_source(source);
  REQUIRE(whole_sink.on_head(worker_head(200, "application/json")));
  CHECK_FALSE(whole->flow_source());
}

TEST_CASE("a worker's repeated fields reach the client each, in order, whole or streamed") {
  auto with_cookies = [](std::string content_type) {
    auto h = worker_head(200, std::move(content_type));
    h.insert(http::field::set_cookie, "a=1");
    h.insert(http::field::set_cookie, "b=2");
    h.set(http::field::content_length, "7");
    h.set(http::field::transfer_encoding, "identity");
    return h;
  };
  auto cookies = [](const transport::header_list& fields) {
    std::vector<std::string> out;
    for (auto& [name, value] : fields) {
      if (name == "Set-Cookie") {
        out.push_back(value);
      }
    }
    return out;
  };
  auto whole = std::make_shared<test::recording_reply>();
  relay_sink sink{whole, "rid", protocol::api_format::openai, 1024};
  REQUIRE(sink.on_head(with_cookies("application/json")));
  REQUIRE(sink.on_body("{\"a\":1}"));
  sink.on_complete();
  auto res = whole->full();
  REQUIRE(res);
  transport::header_list fields;
  for (auto& f : *res) {
    fields.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  CHECK(cookies(fields) == std::vector<std::string>{"a=1", "b=2"});
  // Framing is the gateway's own: the worker's Content-Length and Transfer-Encoding are not kept.
  CHECK((*res)[http::field::content_length].empty());
  CHECK((*res)[http::field::transfer_encoding].empty());
  CHECK(fields.back() == std::pair<std::string, std::string>{"x-request-id", "rid"});

  auto streamed = std::make_shared<test::recording_reply>();
  relay_sink stream_sink{streamed, "rid", protocol::api_format::openai, 1024};
  REQUIRE(stream_sink.on_head(with_cookies("text/event-stream")));
  CHECK(cookies(streamed->stream_headers()) == std::vector<std::string>{"a=1", "b=2"});
}

TEST_CASE("a stream carries one Cache-Control, the gateway's, whatever the worker sent") {
  auto reply = std::make_shared<test::recording_reply>();
  relay_sink sink{reply, "rid", protocol::api_format::openai, 1024};
  auto h = worker_head(200, "text/event-stream");
  h.set(http::field::cache_control, "max-age=60");
  REQUIRE(sink.on_head(h));
  std::vector<std::string> values;
  for (auto& [name, value] : reply->stream_headers()) {
    if (http::string_to_field(name) == http::field::cache_control) {
      values.push_back(value);
    }
  }
  CHECK(values == std::vector<std::string>{"no-cache"});
}
