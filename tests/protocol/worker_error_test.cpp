#include "protocol/worker_error.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

TEST_CASE("a worker's message is quoted from the usual error bodies") {
  auto openai =
      worker_error(400, R"({"error":{"message":"bad temp","type":"x"}})", "the decode worker");
  CHECK(openai.code == error_code::bad_request);
  CHECK(openai.message == "the decode worker answered HTTP 400: bad temp");
  auto sglang = worker_error(500, R"({"object":"error","message":"oom","code":500})", "w");
  CHECK(sglang.code == error_code::bad_gateway);
  CHECK(sglang.message == "w answered HTTP 500: oom");
  CHECK(worker_error(422, R"({"detail":"field required"})", "w").message ==
        "w answered HTTP 422: field required");
  CHECK(worker_error(502, "upstream broke\n", "w").message ==
        "w answered HTTP 502: upstream broke");
  CHECK(worker_error(500, "", "w").message == "w answered HTTP 500");
}

TEST_CASE("the status class is kept") {
  CHECK(worker_error(404, "", "w").code == error_code::not_found);
  CHECK(worker_error(413, "", "w").code == error_code::payload_too_large);
  CHECK(worker_error(429, "", "w").code == error_code::too_many_requests);
  CHECK(worker_error(503, "", "w").code == error_code::no_worker_available);
  CHECK(worker_error(504, "", "w").code == error_code::gateway_timeout);
  CHECK(worker_error(401, "", "w").code == error_code::bad_gateway);
  CHECK(worker_error(501, "", "w").code == error_code::bad_gateway);
}

TEST_CASE("long worker texts are cut") {
  auto e = worker_error(500, std::string(10000, 'x'), "w");
  CHECK(e.message.size() < 600);
}

TEST_CASE("a worker text cut at the quote limit keeps whole characters") {
  // 511 ASCII bytes then 3-byte characters: the 512-byte limit falls inside the first one.
  std::string text(511, 'x');
  for (int i = 0; i < 100; ++i) {
    text += "\xE2\x82\xAC";
  }
  auto cut = worker_error(500, text, "w");
  CHECK(cut.message.find('\xE2') == std::string::npos);
  CHECK(cut.message.substr(cut.message.size() - 3) == "xxx");
  auto json_body = worker_error(400, "{\"message\":\"" + text + "\"}", "w");
  CHECK(json_body.message.find('\xE2') == std::string::npos);
}

TEST_CASE("an error event in a streamed answer is found") {
  auto openai = stream_error("data: {\"text\":\"a\"}\n\ndata: {\"error\":{\"message\":\"oom\"}}\n\n"
                             "data: [DONE]\n\n",
                             "the prefill worker");
  REQUIRE(openai);
  CHECK(openai->code == error_code::bad_gateway);
  CHECK(openai->message == "the prefill worker failed mid-stream: oom");
  auto anthropic =
      stream_error("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                   "\"message\":\"overloaded\"}}\n\n",
                   "w");
  REQUIRE(anthropic);
  CHECK(anthropic->message == "w failed mid-stream: overloaded");
}

TEST_CASE("a clean stream has no error event") {
  CHECK_FALSE(stream_error("data: {\"text\":\"a\",\"error\":null}\n\ndata: [DONE]\n\n", "w"));
  CHECK_FALSE(stream_error("", "w"));
  CHECK_FALSE(stream_error("data: not json\n\n", "w"));
}
