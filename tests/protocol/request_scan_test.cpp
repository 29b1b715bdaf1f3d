#include "protocol/request_scan.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

TEST_CASE("scan reads top-level model and stream only") {
  auto r =
      scan_request(R"({"model":"m","stream":true,"messages":[{"model":"inner","stream":false}]})");
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

#include <nlohmann/json.hpp>
#include <random>

TEST_CASE("the scanner accepts exactly the JSON objects nlohmann accepts (mutation test)") {
  const std::vector<std::string> seeds = {
      R"({"model":"m","stream":true,"messages":[{"role":"user","content":"h\u00e9llo \ud83d\ude00"}]})",
      R"({"a":[1,-2.5e+3,0.1,true,false,null,{"b":{}},[]],"s":"x\"y\\z\/\n","n":-0})",
      R"(  {"text": ["a", "b"], "sampling_params": {"max_new_tokens": 8}}  )",
      "{\"k\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}",
      R"({"prompt":"a long plain ASCII run that spans several eight-byte words, then more"})",
      // Quotes, escapes and multi-byte characters at and past sixteen-byte boundaries.
      "{\"c\":\"0123456789abcdef\\u00e9 0123456789abcde\\\"0123456789abcdef\\\\ "
      "0123456789ab\xc3\xa9"
      "0123456789abcdef0123456789abcde\"}",
      // The same past thirty-two- and sixty-four-byte boundaries (the AVX2 loop's).
      "{\"d\":\"0123456789abcdef0123456789abcde\\\"0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcd\xc3\xa9"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\\\\x\"}",
  };
  std::mt19937 rng{42};
  const std::string alphabet = "{}[]\":,.-+eE0123456789tfnulrsa \\/\x01\x80\xc3\xff";
  int checked = 0;
  for (auto& seed : seeds) {
    for (int i = 0; i < 3000; ++i) {
      std::string s = seed;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        auto pos = rng() % s.size();
        char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
        case 0:
          s[pos] = c;
          break;
        case 1:
          s.insert(s.begin() + static_cast<long>(pos), c);
          break;
        default:
          s.erase(pos, 1);
        }
      }
      bool ours = !scan_request(s).error.has_value();
      bool theirs = nlohmann::json::accept(s) && nlohmann::json::parse(s).is_object();
      INFO("input: " << s);
      REQUIRE(ours == theirs);
      ++checked;
    }
  }
  CHECK(checked == 21000);
}

TEST_CASE("a special byte at any place of a long string is seen, as nlohmann sees it") {
  // Each of a quote, a backslash escape, a control byte, a non-ASCII character and an invalid
  // byte at every offset of a 150-byte string: the wide loops must stop at each of them.
  const std::vector<std::string> specials = {"\\\"",         "\\n",  "\x01", "\x1f", "\xc3\xa9",
                                             "\xe2\x82\xac", "\xff", "\x80", "\""};
  int checked = 0;
  for (const auto& special : specials) {
    for (std::size_t at = 0; at <= 150; ++at) {
      std::string text(150, 'a');
      text.insert(at, special);
      std::string body = R"({"prompt":")" + text + R"(","model":"m"})";
      auto scan = scan_request(body);
      bool theirs = nlohmann::json::accept(body);
      INFO("special " << checked << " at " << at);
      REQUIRE(!scan.error.has_value() == theirs);
      if (theirs) {
        REQUIRE(scan.facts.model == std::optional<std::string>{"m"});
      }
      ++checked;
    }
  }
  CHECK(checked == 9 * 151);
}

TEST_CASE("escaped model names are decoded; watched fields report kind, value and emptiness") {
  const std::string_view watched[] = {"max_tokens", "messages", "tools", "system"};
  auto r = scan_request(
      R"({"model":"caf\u00e9\/1","max_tokens":99999999999999999999,"messages":[ ],"tools":[{}],"system":""})",
      watched);
  REQUIRE_FALSE(r.error);
  CHECK(r.facts.model == "caf\xc3\xa9/1");
  REQUIRE(r.facts.fields.size() == 4);
  CHECK(r.facts.fields[0].kind == json_kind::integer);
  CHECK(r.facts.fields[0].integer == std::numeric_limits<std::int64_t>::max());
  CHECK(r.facts.fields[1].kind == json_kind::array);
  CHECK(r.facts.fields[1].empty);
  CHECK(r.facts.fields[2].kind == json_kind::array);
  CHECK_FALSE(r.facts.fields[2].empty);
  CHECK(r.facts.fields[3].kind == json_kind::string);
  CHECK(r.facts.fields[3].empty);
}

TEST_CASE("absurd nesting is refused, not recursed into") {
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = scan_request(deep);
  REQUIRE(r.error);
  CHECK(r.error->code == error_code::bad_request);
}

TEST_CASE("watched fields report where their raw value lies in the body") {
  const std::string_view watched[] = {"messages", "n", "absent"};
  std::string body = R"({ "n" : 12 , "messages":  [ {"a":"\"}"} ] ,"z":1})";
  auto r = scan_request(body, watched);
  REQUIRE_FALSE(r.error);
  auto raw = [&](std::size_t i) {
    return body.substr(r.facts.fields[i].offset, r.facts.fields[i].length);
  };
  CHECK(raw(0) == R"([ {"a":"\"}"} ])");
  CHECK(raw(1) == "12");
  CHECK(r.facts.fields[2].length == 0);
}

TEST_CASE("a repeated top-level key counts by its last occurrence, as in every later parser") {
  // Found against the reference of tests/fuzz/request_scan_diff_fuzz: the routing facts kept an
  // earlier string when a later occurrence was null or not a string, so the gateway routed by a
  // model the worker's parser never saw.
  CHECK_FALSE(scan_request(R"({"model":"a","model":null})").facts.model);
  CHECK(scan_request(R"({"model":"a","model":"b"})").facts.model == "b");
  CHECK_FALSE(scan_request(R"({"previous_response_id":"x","previous_response_id":5})")
                  .facts.previous_response_id);
  CHECK_FALSE(scan_request(R"({"stream":true,"stream":false})").facts.stream);
  CHECK(scan_request(R"({"stream":false,"stream":true})").facts.stream);
  const std::string_view watched[] = {"messages"};
  std::string body = R"({"messages":[1],"messages":"x"})";
  auto r = scan_request(body, watched);
  REQUIRE_FALSE(r.error);
  CHECK(r.facts.fields[0].kind == json_kind::string);
  CHECK(body.substr(r.facts.fields[0].offset, r.facts.fields[0].length) == R"("x")");
}
