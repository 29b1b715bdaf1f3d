#include "actors/request/request_hints.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::actors;
namespace http = transport::http;

namespace {

transport::request with(std::initializer_list<std::pair<std::string, std::string>> h) {
  transport::request req{http::verb::post, "/v1/chat/completions", 11};
  for (auto& [name, value] : h) {
    req.insert(name, value);
  }
  return req;
}

} // namespace

TEST_CASE("a request without hints asks nothing of the policies") {
  auto hints = affinity_hints_of(with({{"Content-Type", "application/json"}}));
  CHECK(hints.routing_key.empty());
  CHECK(hints.target.empty());
}

TEST_CASE("the routing key is the first given of its headers, in their precedence") {
  // Written in the opposite order of precedence: the order of the headers does not matter.
  auto req = with({{"X-User-Id", "user"},
                   {"x-session-id", "session"},
                   {"X-Routing-Key", "key"},
                   {"X-SMG-Routing-Key", "smg"}});
  CHECK(affinity_hints_of(req).routing_key == "smg");
  CHECK(affinity_hints_of(with({{"x-user-id", "user"}, {"x-session-id", "session"}})).routing_key ==
        "session");
  CHECK(affinity_hints_of(with({{"x-user-id", "user"}})).routing_key == "user");
}

TEST_CASE("an empty routing header yields to the next one") {
  auto req = with({{"x-smg-routing-key", ""}, {"x-user-id", "user"}});
  CHECK(affinity_hints_of(req).routing_key == "user");
}

TEST_CASE("of repeated routing headers the first counts") {
  auto req = with({{"x-routing-key", "first"}, {"x-routing-key", "second"}});
  CHECK(affinity_hints_of(req).routing_key == "first");
}

TEST_CASE("the target-worker header is read beside the routing key") {
  auto req = with({{"X-SMG-Target-Worker", "w-3"}, {"x-session-id", "s"}});
  auto hints = affinity_hints_of(req);
  CHECK(hints.target == "w-3");
  CHECK(hints.routing_key == "s");
}
