#include "protocol/error.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

using namespace troupe::protocol;

TEST_CASE("the error table has one row per code, in enum order") {
  // The table is the bound (error.cpp also checks the order when it compiles).
  auto rows = error_codes();
  REQUIRE_FALSE(rows.empty());
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto code = static_cast<error_code>(i);
    CHECK(rows[i].code == code);
    CHECK(&info(code) == &rows[i]);
    CHECK_FALSE(to_string(code).empty());
    CHECK(names.insert(to_string(code)).second);
    CHECK_FALSE(rows[i].openai_type.empty());
    CHECK_FALSE(rows[i].anthropic_type.empty());
  }
}

TEST_CASE("client errors come first, then server errors") {
  bool server = false;
  for (auto& row : error_codes()) {
    INFO(row.name);
    CHECK(row.http_status >= 400);
    CHECK(row.http_status < 600);
    if (row.http_status >= 500) {
      server = true;
    }
    CHECK((row.http_status >= 500) == server);
  }
  CHECK(server);
}

TEST_CASE("client errors map to 4xx, server errors to 5xx") {
  CHECK(http_status(error_code::bad_request) == 400);
  CHECK(http_status(error_code::invalid_json) == 400);
  CHECK(http_status(error_code::unauthorized) == 401);
  CHECK(http_status(error_code::model_not_found) == 404);
  CHECK(http_status(error_code::method_not_allowed) == 405);
  CHECK(http_status(error_code::payload_too_large) == 413);
  CHECK(http_status(error_code::too_many_requests) == 429);
  CHECK(http_status(error_code::queue_timeout) == 408);
  CHECK(http_status(error_code::header_too_large) == 431);
  CHECK(http_status(error_code::request_header_timeout) == 408);
  CHECK(http_status(error_code::not_implemented) == 501);
  CHECK(http_status(error_code::bad_gateway) == 502);
  CHECK(http_status(error_code::no_worker_available) == 503);
  CHECK(http_status(error_code::gateway_timeout) == 504);
}

TEST_CASE("OpenAI error bodies carry message, type, param and code") {
  auto body = nlohmann::json::parse(render_error_body(
      {error_code::model_not_found, "no such model", "model"}, api_format::openai));
  CHECK(body["error"]["message"] == "no such model");
  CHECK(body["error"]["type"] == "invalid_request_error");
  CHECK(body["error"]["param"] == "model");
  CHECK(body["error"]["code"] == "model_not_found");
  auto no_param = nlohmann::json::parse(
      render_error_body({error_code::bad_gateway, "x", ""}, api_format::openai));
  CHECK(no_param["error"]["param"].is_null());
}

TEST_CASE("Anthropic error bodies have type error and a typed inner error") {
  auto body = nlohmann::json::parse(render_error_body(
      {error_code::bad_request, "max_tokens: required", ""}, api_format::anthropic));
  CHECK(body["type"] == "error");
  CHECK(body["error"]["type"] == "invalid_request_error");
  CHECK(body["error"]["message"] == "max_tokens: required");
  auto overloaded = nlohmann::json::parse(
      render_error_body({error_code::no_worker_available, "busy", ""}, api_format::anthropic));
  CHECK(overloaded["error"]["type"] == "overloaded_error");
}

TEST_CASE("admission refusals are rate limits and timeouts in both formats") {
  auto full = api_error{error_code::too_many_requests, "at capacity", ""};
  auto oa = nlohmann::json::parse(render_error_body(full, api_format::openai));
  CHECK(oa["error"]["type"] == "rate_limit_error");
  CHECK(oa["error"]["code"] == "too_many_requests");
  auto an = nlohmann::json::parse(render_error_body(full, api_format::anthropic));
  CHECK(an["error"]["type"] == "rate_limit_error");
  auto waited = api_error{error_code::queue_timeout, "waited too long", ""};
  CHECK(nlohmann::json::parse(render_error_body(waited, api_format::openai))["error"]["code"] ==
        "queue_timeout");
  CHECK(nlohmann::json::parse(render_error_body(waited, api_format::anthropic))["error"]["type"] ==
        "timeout_error");
}

TEST_CASE("error events are one SSE event in the stream's format") {
  auto oa = render_error_event({error_code::bad_gateway, "broke", ""}, api_format::openai);
  CHECK(oa.rfind("data: {", 0) == 0);
  CHECK(oa.substr(oa.size() - 2) == "\n\n");
  auto an = render_error_event({error_code::bad_gateway, "broke", ""}, api_format::anthropic);
  CHECK(an.rfind("event: error\ndata: {", 0) == 0);
}

TEST_CASE("invalid UTF-8 in a message does not break rendering") {
  auto body = render_error_body({error_code::bad_request, std::string("bad \xff byte"), ""},
                                api_format::openai);
  CHECK_NOTHROW(nlohmann::json::parse(body));
}
