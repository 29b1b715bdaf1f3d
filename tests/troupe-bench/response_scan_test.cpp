#include "apps/troupe-bench/response_scan.hpp"

#include <catch2/catch.hpp>

using namespace troupe::bench;

// Events as troupe-sim (and the APIs it copies) send them.

TEST_CASE("chat: role chunk is framing, content chunks are tokens, usage and [DONE]",
          "[response_scan]") {
  auto role = read_event(api_kind::chat,
                         R"(data: {"choices":[{"delta":{"content":"","role":"assistant"},)"
                         R"("finish_reason":null,"index":0}],"object":"chat.completion.chunk"})"
                         "\n\n");
  CHECK(role.kind == event_kind::other);
  auto tok =
      read_event(api_kind::chat, R"(data: {"choices":[{"delta":{"content":"green"},"index":0}]})"
                                 "\n\n");
  CHECK(tok.kind == event_kind::token);
  // A token whose text contains quotes and the key itself is still one token.
  auto tricky =
      read_event(api_kind::chat, R"(data: {"choices":[{"delta":{"content":"\"content\":\"x"}}]})"
                                 "\n\n");
  CHECK(tricky.kind == event_kind::token);
  auto tool = read_event(api_kind::chat, R"(data: {"choices":[{"delta":{"tool_calls":[{"index":0,)"
                                         R"("function":{"arguments":"{\"a"}}]}}]})"
                                         "\n\n");
  CHECK(tool.kind == event_kind::token);
  auto finish =
      read_event(api_kind::chat, R"(data: {"choices":[{"delta":{},"finish_reason":"length"}]})"
                                 "\n\n");
  CHECK(finish.kind == event_kind::other);
  auto usage_chunk = read_event(
      api_kind::chat, R"(data: {"choices":[],"usage":{"completion_tokens":2,"prompt_tokens":30,)"
                      R"("prompt_tokens_details":{"cached_tokens":16},"total_tokens":32}})"
                      "\n\n");
  CHECK(usage_chunk.kind == event_kind::other);
  CHECK(usage_chunk.counts.output_tokens == 2);
  CHECK(usage_chunk.counts.prompt_tokens == 30);
  CHECK(usage_chunk.counts.cached_tokens == 16);
  CHECK(read_event(api_kind::chat, "data: [DONE]\n\n").kind == event_kind::done);
  CHECK(read_event(api_kind::chat, "data: [DONE]\r\n\r\n").kind == event_kind::done);
  CHECK(read_event(api_kind::chat, R"(data: {"error":{"message":"boom"}})"
                                   "\n\n")
            .kind == event_kind::error);
}

TEST_CASE("messages: deltas are tokens, usage from message_start and message_delta",
          "[response_scan]") {
  auto start = read_event(
      api_kind::messages,
      "event: message_start\n"
      R"(data: {"message":{"usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":32,)"
      R"("input_tokens":8,"output_tokens":0}},"type":"message_start"})"
      "\n\n");
  CHECK(start.kind == event_kind::other);
  CHECK(start.counts.prompt_tokens == 40);
  CHECK(start.counts.cached_tokens == 32);
  CHECK(start.counts.output_tokens == -1);
  CHECK(read_event(api_kind::messages,
                   "event: content_block_start\ndata: {\"content_block\":{\"text\":\"\"}}\n\n")
            .kind == event_kind::other);
  CHECK(read_event(api_kind::messages, "event: ping\ndata: {\"type\":\"ping\"}\n\n").kind ==
        event_kind::other);
  CHECK(read_event(api_kind::messages, "event: content_block_delta\n"
                                       R"(data: {"delta":{"text":"green","type":"text_delta"}})"
                                       "\n\n")
            .kind == event_kind::token);
  auto delta =
      read_event(api_kind::messages,
                 "event: message_delta\n"
                 R"(data: {"delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":2}})"
                 "\n\n");
  CHECK(delta.counts.output_tokens == 2);
  CHECK(delta.counts.prompt_tokens == -1);
  CHECK(read_event(api_kind::messages, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
            .kind == event_kind::done);
  CHECK(read_event(api_kind::messages, "event: error\ndata: {\"type\":\"error\"}\n\n").kind ==
        event_kind::error);
  // Without an event line, the data's type names it.
  CHECK(read_event(api_kind::messages, R"(data: {"type":"content_block_delta","delta":{}})"
                                       "\n\n")
            .kind == event_kind::token);
}

TEST_CASE("responses: text deltas are tokens, usage from response.completed", "[response_scan]") {
  CHECK(read_event(api_kind::responses,
                   "event: response.created\n"
                   R"(data: {"response":{"usage":null},"type":"response.created"})"
                   "\n\n")
            .kind == event_kind::other);
  CHECK(read_event(api_kind::responses,
                   "event: response.output_text.delta\n"
                   R"(data: {"delta":"green","type":"response.output_text.delta"})"
                   "\n\n")
            .kind == event_kind::token);
  CHECK(read_event(api_kind::responses,
                   "event: response.output_text.done\n"
                   R"(data: {"text":"green answer","type":"response.output_text.done"})"
                   "\n\n")
            .kind == event_kind::other);
  auto done = read_event(api_kind::responses,
                         "event: response.completed\n"
                         R"(data: {"response":{"status":"completed","usage":{"input_tokens":30,)"
                         R"("input_tokens_details":{"cached_tokens":16},"output_tokens":2}},)"
                         R"("type":"response.completed"})"
                         "\n\n");
  CHECK(done.kind == event_kind::done);
  CHECK(done.counts.prompt_tokens == 30);
  CHECK(done.counts.cached_tokens == 16);
  CHECK(done.counts.output_tokens == 2);
  CHECK(read_event(api_kind::responses, "event: response.failed\ndata: {}\n\n").kind ==
        event_kind::error);
}

TEST_CASE("whole bodies: counts of each API; errors and non-JSON refused", "[response_scan]") {
  usage u;
  std::string why;
  REQUIRE(read_body(api_kind::chat,
                    R"({"choices":[],"usage":{"completion_tokens":5,"prompt_tokens":9,)"
                    R"("prompt_tokens_details":{"cached_tokens":4}}})",
                    u, why));
  CHECK(u.output_tokens == 5);
  CHECK(u.prompt_tokens == 9);
  CHECK(u.cached_tokens == 4);
  REQUIRE(read_body(api_kind::messages,
                    R"({"type":"message","usage":{"cache_creation_input_tokens":0,)"
                    R"("cache_read_input_tokens":3,"input_tokens":2,"output_tokens":2}})",
                    u, why));
  CHECK(u.prompt_tokens == 5);
  CHECK(u.cached_tokens == 3);
  CHECK(u.output_tokens == 2);
  REQUIRE(read_body(api_kind::responses,
                    R"({"error":null,"usage":{"input_tokens":2,"input_tokens_details":)"
                    R"({"cached_tokens":0},"output_tokens":2}})",
                    u, why));
  CHECK(u.prompt_tokens == 2);
  CHECK(u.output_tokens == 2);
  // Braces and the key inside text do not confuse the look for the usage object.
  REQUIRE(read_body(api_kind::chat,
                    R"({"choices":[{"message":{"content":"}{ \"usage\": {\"x"}}], "usage" : )"
                    R"({"completion_tokens":7,"prompt_tokens":1}})",
                    u, why));
  CHECK(u.output_tokens == 7);
  CHECK(u.cached_tokens == -1);
  CHECK_FALSE(read_body(api_kind::chat, "not json", u, why));
  CHECK(why == "the response body is not a JSON object");
  CHECK_FALSE(read_body(api_kind::chat, R"({"error":{"message":"x"}})", u, why));
  CHECK_FALSE(read_body(api_kind::messages, R"({"type":"error","error":{"type":"x"}})", u, why));
  CHECK(why == "the response is an error");
}
