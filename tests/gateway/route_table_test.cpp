#include "gateway/route_table.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <string_view>

using namespace troupe;
using namespace troupe::gateway;
using verb = transport::http::verb;

TEST_CASE("routes match literal and parameter segments") {
  route_table t;
  int hit = 0;
  t.add(verb::get, "/v1/responses/{id}", [&](http_context&) { hit = 1; });
  t.add(verb::delete_, "/v1/responses/{id}", [&](http_context&) { hit = 2; });
  t.add(verb::post, "/v1/responses/{id}/cancel", [&](http_context&) { hit = 3; });
  t.add(
      verb::get, "/health", [&](http_context&) {}, protocol::api_format::openai, true);

  auto m = t.find(verb::delete_, "/v1/responses/resp_1");
  REQUIRE(m.handler);
  CHECK(m.params == std::vector<std::string>{"resp_1"});
  http_context ctx;
  (*m.handler)(ctx);
  CHECK(hit == 2);

  auto c = t.find(verb::post, "/v1/responses/abc/cancel");
  REQUIRE(c.handler);
  CHECK(c.params == std::vector<std::string>{"abc"});

  CHECK(t.find(verb::get, "/health").public_route);
  CHECK(t.find(verb::get, "//health/").handler);
}

TEST_CASE("a known path with another method lists the allowed ones; unknown paths are unknown") {
  route_table t;
  t.add(verb::post, "/v1/chat/completions", [](http_context&) {});
  auto m = t.find(verb::get, "/v1/chat/completions");
  CHECK_FALSE(m.handler);
  CHECK(m.path_known);
  CHECK(m.allowed == "POST");
  auto u = t.find(verb::post, "/v1/chat/completion");
  CHECK_FALSE(u.path_known);
  CHECK_FALSE(t.find(verb::post, "/v1/chat/completions/extra").path_known);
}

TEST_CASE("request ids are 32 hex digits and differ") {
  auto a = new_request_id();
  auto b = new_request_id();
  CHECK(a.size() == 32);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
}

TEST_CASE("request ids spread over every hex digit in every position") {
  // 2,000 ids: each of the 32 positions sees all 16 digits (a generator or hex table that
  // left a position or a digit out would fail; the chance for a good one is ~1e-50).
  std::array<std::array<bool, 16>, 32> seen{};
  std::set<std::string> ids;
  for (int n = 0; n < 2000; ++n) {
    auto id = new_request_id();
    REQUIRE(id.size() == 32);
    ids.insert(id);
    for (std::size_t i = 0; i < id.size(); ++i) {
      auto d = std::string_view("0123456789abcdef").find(id[i]);
      REQUIRE(d != std::string_view::npos);
      seen[i][d] = true;
    }
  }
  CHECK(ids.size() == 2000);
  for (auto& position : seen) {
    for (bool digit : position) {
      CHECK(digit);
    }
  }
}

TEST_CASE("a HEAD is served by the path's GET route unless a route names HEAD") {
  route_table t;
  int hit = 0;
  t.add(verb::get, "/v1/models/{id}", [&](http_context&) { hit = 1; });
  t.add(verb::delete_, "/v1/models/{id}", [&](http_context&) { hit = 2; });
  t.add(verb::get, "/probe", [&](http_context&) { hit = 3; });
  t.add(verb::head, "/probe", [&](http_context&) { hit = 4; });
  t.add(verb::post, "/v1/chat/completions", [](http_context&) {});

  auto m = t.find(verb::head, "/v1/models/m1");
  REQUIRE(m.handler);
  CHECK(m.head_as_get);
  CHECK(m.params == std::vector<std::string>{"m1"});
  REQUIRE(m.pattern);
  CHECK(*m.pattern == "/v1/models/{id}");
  http_context ctx;
  (*m.handler)(ctx);
  CHECK(hit == 1);

  // A route of its own for HEAD wins over the GET's, wherever it is in the table.
  auto own = t.find(verb::head, "/probe");
  REQUIRE(own.handler);
  CHECK_FALSE(own.head_as_get);
  (*own.handler)(ctx);
  CHECK(hit == 4);

  // A GET is a GET.
  CHECK_FALSE(t.find(verb::get, "/v1/models/m1").head_as_get);

  // No GET route, no HEAD: 405, and the Allow of a GET route names HEAD.
  auto post_only = t.find(verb::head, "/v1/chat/completions");
  CHECK_FALSE(post_only.handler);
  CHECK(post_only.path_known);
  CHECK(post_only.allowed == "POST");
  CHECK(t.find(verb::post, "/v1/models/m1").allowed == "GET, DELETE, HEAD");
  CHECK(t.find(verb::post, "/probe").allowed == "GET, HEAD");
  CHECK_FALSE(t.find(verb::head, "/nothing").path_known);
}

TEST_CASE("a literal path's answer from the index is the scan's, for every method") {
  // "/a/b" is looked up in the index of literal paths; "//a//b/" (the same segments) is not
  // and takes the scan: both must answer alike, whichever route comes first in the table.
  route_table t;
  t.add(verb::get, "/v1/responses/{id}", [](http_context&) {});
  t.add(verb::post, "/v1/responses/input", [](http_context&) {});
  t.add(verb::delete_, "/v1/responses/{id}", [](http_context&) {});
  t.add(
      verb::get, "/health", [](http_context&) {}, protocol::api_format::openai, true);
  t.add(
      verb::post, "/v1/messages", [](http_context&) {}, protocol::api_format::anthropic);
  t.add(verb::head, "/probe", [](http_context&) {});
  t.add(verb::get, "/probe", [](http_context&) {});
  for (std::string path : {"/v1/responses/input", "/health", "/v1/messages", "/probe"}) {
    std::string scattered = "/";
    for (char c : path) {
      scattered += c;
      if (c == '/') {
        scattered += '/';
      }
    }
    scattered += '/';
    for (auto method : {verb::get, verb::head, verb::post, verb::delete_, verb::put, verb::options,
                        verb::patch}) {
      CAPTURE(path, scattered, transport::http::to_string(method));
      auto a = t.find(method, path);
      auto b = t.find(method, scattered);
      CHECK(a.handler == b.handler);
      CHECK(a.format == b.format);
      CHECK(a.public_route == b.public_route);
      CHECK(a.pattern == b.pattern);
      CHECK(a.path_known == b.path_known);
      CHECK(a.allowed == b.allowed);
      CHECK(a.head_as_get == b.head_as_get);
      CHECK(a.params == b.params);
    }
  }
  // The parameter route comes first in the table for GET, the literal one answers POST.
  auto get = t.find(verb::get, "/v1/responses/input");
  REQUIRE(get.handler);
  CHECK(get.params == std::vector<std::string>{"input"});
  CHECK(t.find(verb::post, "/v1/responses/input").params.empty());
  CHECK(t.find(verb::put, "/v1/responses/input").allowed == "GET, POST, DELETE, HEAD");
  CHECK(t.find(verb::post, "/v1/messages").format == protocol::api_format::anthropic);
}
