#include "protocol/upstream_error.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe::protocol;
using json = nlohmann::json;

TEST_CASE("utf8_prefix never ends inside a character") {
  std::string s = "a\xC3\xA9"         // é (2 bytes)
                  "\xE2\x82\xAC"      // € (3 bytes)
                  "\xF0\x9F\x98\x80"; // 😀 (4 bytes)
  CHECK(utf8_prefix(s, 100) == s);
  CHECK(utf8_prefix(s, 1) == "a");
  CHECK(utf8_prefix(s, 2) == "a");
  CHECK(utf8_prefix(s, 3) == "a\xC3\xA9");
  CHECK(utf8_prefix(s, 4) == "a\xC3\xA9");
  CHECK(utf8_prefix(s, 5) == "a\xC3\xA9");
  CHECK(utf8_prefix(s, 6) == "a\xC3\xA9\xE2\x82\xAC");
  CHECK(utf8_prefix(s, 9) == "a\xC3\xA9\xE2\x82\xAC");
  CHECK(utf8_prefix(s, 10) == s);
  CHECK(utf8_prefix(s, 0).empty());
}

TEST_CASE("utf8_prefix counts malformed bytes one by one") {
  std::string s = "\x80\x80\xC3x\xE2\x82";
  CHECK(utf8_prefix(s, 2) == "\x80\x80");
  CHECK(utf8_prefix(s, 3) == "\x80\x80\xC3");
  CHECK(utf8_prefix(s, 5) == "\x80\x80\xC3x");
  CHECK(utf8_prefix(s, 100) == "\x80\x80\xC3x"); // the text ends inside its last character
}

TEST_CASE("an error body in the route's format passes unchanged") {
  std::string oa = R"({"error":{"message":"bad","type":"invalid_request_error"}})";
  CHECK(client_error_body(400, oa, false, api_format::openai) == oa);
  std::string an = R"({"type":"error","error":{"type":"not_found_error","message":"no"}})";
  CHECK(client_error_body(404, an, false, api_format::anthropic) == an);
}

TEST_CASE("a foreign error body is rewritten into the route's format with its message") {
  auto sglang = R"({"object":"error","message":"context too long","type":"BadRequestError"})";
  auto an = json::parse(client_error_body(400, sglang, false, api_format::anthropic));
  CHECK(an["type"] == "error");
  CHECK(an["error"]["type"] == "invalid_request_error");
  CHECK(an["error"]["message"] == "the worker answered 400: context too long");
  auto oa =
      json::parse(client_error_body(429, R"({"detail":"slow down"})", false, api_format::openai));
  CHECK(oa["error"]["type"] == "rate_limit_error");
  CHECK(oa["error"]["message"] == "the worker answered 429: slow down");
  // An Anthropic error is an OpenAI one too (an `error` object with a message): it passes.
  std::string an_err = R"({"type":"error","error":{"type":"rate_limit_error","message":"x"}})";
  CHECK(client_error_body(429, an_err, false, api_format::openai) == an_err);
  auto text = json::parse(client_error_body(502, "Bad Gateway\n", false, api_format::openai));
  CHECK(text["error"]["type"] == "server_error");
  CHECK(text["error"]["message"] == "the worker answered 502: Bad Gateway\n");
}

TEST_CASE("a truncated error body becomes an excerpt cut on a character boundary") {
  std::string body =
      "{\"error\":{\"message\":\"" + std::string(10, 'x') + "\xE2\x82\xAC\xE2\x82\xAC";
  auto cut = body.substr(0, body.size() - 2); // the reader stopped inside the last €
  auto out = json::parse(client_error_body(500, cut, true, api_format::anthropic, 1024));
  auto msg = out["error"]["message"].get<std::string>();
  CHECK(out["error"]["type"] == "api_error");
  CHECK(msg.find("\xEF\xBF\xBD") == std::string::npos); // no replacement character
  CHECK(msg.size() >= 11);
  CHECK(msg.substr(msg.size() - 12) == " [truncated]");
  auto small =
      json::parse(client_error_body(500, "\xE2\x82\xAC\xE2\x82\xAC", false, api_format::openai, 4));
  CHECK(small["error"]["message"] == "the worker answered 500: \xE2\x82\xAC [truncated]");
}

TEST_CASE("error types follow the worker's status") {
  CHECK(error_type_for_status(401, api_format::anthropic) == "authentication_error");
  CHECK(error_type_for_status(404, api_format::anthropic) == "not_found_error");
  CHECK(error_type_for_status(404, api_format::openai) == "invalid_request_error");
  CHECK(error_type_for_status(529, api_format::anthropic) == "overloaded_error");
  CHECK(error_type_for_status(500, api_format::openai) == "server_error");
}
