#include "apps/troupe-bench/api.hpp"
#include "apps/troupe-bench/run_context.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe::bench;
using nlohmann::json;

namespace {

prompt conversation() {
  prompt p;
  p.system = "sys";
  p.messages = {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}};
  return p;
}

body_options options(bool stream) {
  body_options o;
  o.model = "m";
  o.stream = stream;
  o.max_tokens = 16;
  return o;
}

} // namespace

TEST_CASE("chat: system message first, usage asked for in streams", "[api]") {
  auto b = json::parse(make_body(api_kind::chat, conversation(), options(true)));
  CHECK(b["model"] == "m");
  CHECK(b["stream"] == true);
  CHECK(b["max_tokens"] == 16);
  CHECK(b["stream_options"]["include_usage"] == true);
  REQUIRE(b["messages"].size() == 4);
  CHECK(b["messages"][0] == json{{"role", "system"}, {"content", "sys"}});
  CHECK(b["messages"][3] == json{{"role", "user"}, {"content", "q2"}});
  auto plain = json::parse(make_body(api_kind::chat, conversation(), options(false)));
  CHECK_FALSE(plain.contains("stream_options"));
  CHECK(plain["stream"] == false);
}

TEST_CASE("messages: system apart, max_tokens always", "[api]") {
  auto b = json::parse(make_body(api_kind::messages, conversation(), options(true)));
  CHECK(b["system"] == "sys");
  CHECK(b["max_tokens"] == 16);
  REQUIRE(b["messages"].size() == 3);
  CHECK(b["messages"][0]["role"] == "user");
}

TEST_CASE("responses: instructions, input list, nothing stored", "[api]") {
  auto p = conversation();
  p.max_tokens = 3;
  auto o = options(false);
  o.ignore_eos = true;
  o.temperature = 0.5;
  auto b = json::parse(make_body(api_kind::responses, p, o));
  CHECK(b["instructions"] == "sys");
  CHECK(b["input"].size() == 3);
  CHECK(b["max_output_tokens"] == 3);
  CHECK(b["store"] == false);
  CHECK(b["ignore_eos"] == true);
  CHECK(b["temperature"] == 0.5);
}

TEST_CASE("a whole body is sent as it is, model and stream added when absent", "[api]") {
  prompt p;
  p.body = json{{"messages", json::array()}, {"stream", false}, {"n", 3}};
  auto b = json::parse(make_body(api_kind::chat, p, options(true)));
  CHECK(b["model"] == "m");
  CHECK(b["stream"] == false);
  CHECK(b["n"] == 3);
}

TEST_CASE("a serialized POST has its path, host, headers and length", "[api]") {
  target t;
  t.authority = "gw:8080";
  t.path_prefix = "/base";
  auto bytes = serialize_post(t, "/v1/messages", "X-A: 1\r\n", "{}");
  CHECK(bytes == "POST /base/v1/messages HTTP/1.1\r\nHost: gw:8080\r\nX-A: 1\r\n"
                 "Content-Length: 2\r\n\r\n{}");
}
