#include "actors/request/pd_reply_gate.hpp"
#include "tests/fakes/recording_reply.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using actors::pd_reply_gate;

namespace {

transport::response json_response(unsigned status, std::string body) {
  transport::response res{static_cast<transport::http::status>(status), 11};
  res.set(transport::http::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

std::string joined(const std::vector<std::string>& chunks) {
  std::string out;
  for (auto& c : chunks) {
    out += c;
  }
  return out;
}

const protocol::api_error prefill_failed{
    protocol::error_code::bad_gateway, "prefill leg: boom", {}};

} // namespace

TEST_CASE("the gate holds a decode response until the prefill leg succeeded") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.respond(json_response(200, R"({"text":"hi"})"));
  CHECK_FALSE(client->full());
  CHECK_FALSE(gate.touched_client());
  gate.open();
  REQUIRE(client->full());
  CHECK(client->full()->body() == R"({"text":"hi"})");
  CHECK(gate.touched_client());
}

TEST_CASE("after opening, the response passes straight through") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.open();
  gate.begin_stream(200, {});
  gate.write_chunk("data: 1\n\n");
  CHECK(client->stream_status() == 200);
  CHECK(client->chunks() == std::vector<std::string>{"data: 1\n\n"});
  gate.end_stream();
  CHECK(client->ended());
}

TEST_CASE("a held stream is flushed in order on open") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.begin_stream(200, {{"content-type", "text/event-stream"}});
  gate.write_chunk("data: a\n\n");
  gate.write_chunk("data: b\n\n");
  gate.end_stream();
  CHECK(client->stream_status() == 0);
  gate.open();
  CHECK(client->stream_status() == 200);
  CHECK(joined(client->chunks()) == "data: a\n\ndata: b\n\n");
  CHECK(client->ended());
}

TEST_CASE("a failed pair discards what was held and answers a clean error") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.begin_stream(200, {});
  gate.write_chunk("data: a\n\n");
  auto status = gate.fail(prefill_failed, protocol::api_format::openai, "rid", 11);
  CHECK(status == 502);
  REQUIRE(client->full());
  CHECK(client->full()->result_int() == 502);
  CHECK(client->full()->body().find("prefill leg: boom") != std::string::npos);
  CHECK(client->chunks().empty());
  // Late calls from the relay do nothing.
  gate.write_chunk("data: b\n\n");
  gate.open();
  CHECK(client->chunks().empty());
}

TEST_CASE("a failure after the stream reached the client ends it with an error event") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.open();
  gate.begin_stream(200, {});
  gate.write_chunk("event: message_start\ndata: {}\n\n");
  gate.fail(prefill_failed, protocol::api_format::anthropic, "rid", 11);
  auto out = joined(client->chunks());
  CHECK(out.find("event: error") != std::string::npos);
  CHECK(out.find("prefill leg: boom") != std::string::npos);
  CHECK(client->ended());
  CHECK_FALSE(client->full());
}

TEST_CASE("a decode error response is held even when open, and can be relayed as is") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  gate.open();
  gate.respond(json_response(400, R"({"error":{"message":"bad"}})"));
  CHECK_FALSE(client->full());
  REQUIRE(gate.error_response());
  CHECK(gate.error_response()->first == 400);
  auto status = gate.fail(prefill_failed, protocol::api_format::openai, "rid", 11, true);
  CHECK(status == 400);
  REQUIRE(client->full());
  CHECK(client->full()->body() == R"({"error":{"message":"bad"}})");
}

TEST_CASE("opening with prefill logprobs merges them into bodies and events") {
  auto lp = protocol::read_input_logprobs(R"({"meta_info":{"input_token_logprobs":[[-1,1,null]]}})",
                                          false);
  SECTION("a held body") {
    auto client = std::make_shared<test::recording_reply>();
    pd_reply_gate gate{client, 1 << 20};
    gate.respond(json_response(200, R"({"meta_info":{"input_token_logprobs":[[-2,2,null]]}})"));
    gate.open(lp);
    REQUIRE(client->full());
    CHECK(client->full()->body() ==
          R"({"meta_info":{"input_token_logprobs":[[-1,1,null],[-2,2,null]]}})");
  }
  SECTION("events held and streamed, split anywhere") {
    auto client = std::make_shared<test::recording_reply>();
    pd_reply_gate gate{client, 1 << 20};
    gate.begin_stream(200, {});
    gate.write_chunk("data: {\"meta_info\":{}}\n\n");
    gate.open(lp);
    gate.write_chunk("data: {\"meta_info\":{}}\n\ndata: [DONE]\n\n");
    gate.end_stream();
    CHECK(joined(client->chunks()) ==
          "data: {\"meta_info\":{\"input_token_logprobs\":[[-1,1,null]]}}\n\n"
          "data: {\"meta_info\":{\"input_token_logprobs\":[[-1,1,null]]}}\n\n"
          "data: [DONE]\n\n");
  }
}

TEST_CASE("a stream larger than the hold limit overflows instead of growing") {
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 16};
  gate.begin_stream(200, {});
  gate.write_chunk("data: 0123456789\n\n");
  CHECK(gate.overflowed());
  gate.open();
  CHECK(client->chunks().empty());
  gate.fail({protocol::error_code::upstream_too_large, "too much", {}},
            protocol::api_format::openai, "rid", 11);
  REQUIRE(client->full());
  CHECK(client->full()->result_int() == 502);
}

TEST_CASE("the decode stream's flow source passes through the gate to the client") {
  struct source final : transport::flow_source {
    void pause() override {}
    void resume() override {}
  };
  auto client = std::make_shared<test::recording_reply>();
  pd_reply_gate gate{client, 1 << 20};
  auto s = std::make_shared<source>();
  gate.set_flow_source(s);
  CHECK(client->flow_source() == s);
}
