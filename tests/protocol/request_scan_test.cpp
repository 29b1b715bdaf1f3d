#include "protocol/request_scan.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

TEST_CASE("scan reads top-level model and stream only") {
  auto r = scan_request(R"({"model":"m","stream":true,"messages":[{"model":"inner","stream":false}]})");
  REQUIRE_FALSE(r.error);
  CHECK(r.facts.model == "m");
  CHECK(r.facts.stream);
}

TEST_CASE("absent facts stay absent") {
  auto r = scan_request(R"({"text":"hi"})");
  REQUIRE_FALSE(r.error);
  CHECK_FALSE(r.facts.model);
  CHECK_FALSE(r.facts.stream);
}

TEST_CASE("malformed JSON is invalid_json") {
  for (auto body : {"", "{", "{\"a\":}", "not json", "{\"a\":1}}"}) {
    auto r = scan_request(body);
    REQUIRE(r.error);
    CHECK(r.error->code == error_code::invalid_json);
  }
}

TEST_CASE("non-object bodies and ill-typed facts are bad_request") {
  CHECK(scan_request("[1,2]").error->code == error_code::bad_request);
  CHECK(scan_request("42").error->code == error_code::bad_request);
  auto s = scan_request(R"({"stream":"yes"})");
  REQUIRE(s.error);
  CHECK(s.error->code == error_code::bad_request);
  CHECK(s.error->param == "stream");
  auto m = scan_request(R"({"model":7})");
  REQUIRE(m.error);
  CHECK(m.error->param == "model");
  CHECK(scan_request(R"({"model":{"a":1}})").error->param == "model");
}

TEST_CASE("a null model means no model") {
  auto r = scan_request(R"({"model":null})");
  REQUIRE_FALSE(r.error);
  CHECK_FALSE(r.facts.model);
}
