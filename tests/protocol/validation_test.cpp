#include "protocol/validation.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;

namespace {

std::optional<api_error> check(operation op, std::string_view body) {
  return scan_and_validate(op, body).error;
}

} // namespace

TEST_CASE("a complete Messages request passes") {
  auto r = scan_and_validate(
      operation::messages,
      R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"stream":true})");
  REQUIRE_FALSE(r.error);
  CHECK(r.facts.model == "m");
  CHECK(r.facts.stream);
}

TEST_CASE("Messages requires model, max_tokens and messages, in Anthropic's words") {
  auto missing = check(operation::messages, R"({"model":"m","messages":[{"role":"user"}]})");
  REQUIRE(missing);
  CHECK(missing->code == error_code::bad_request);
  CHECK(missing->message == "max_tokens: Field required");
  CHECK(missing->param == "max_tokens");
  CHECK(check(operation::messages, R"({"max_tokens":5,"messages":[{}]})")->message ==
        "model: Field required");
  CHECK(check(operation::messages, R"({"model":"m","max_tokens":5})")->message ==
        "messages: Field required");
  CHECK(check(operation::messages, R"({"model":null,"max_tokens":5,"messages":[{}]})")->param ==
        "model");
}

TEST_CASE("Messages rejects ill-typed and out-of-range fields") {
  auto zero = check(operation::messages, R"({"model":"m","max_tokens":0,"messages":[{}]})");
  REQUIRE(zero);
  CHECK(zero->message == "max_tokens: Input should be greater than or equal to 1");
  auto text = check(operation::messages, R"({"model":"m","max_tokens":"5","messages":[{}]})");
  REQUIRE(text);
  CHECK(text->message == "max_tokens: Input should be an integer, got a string");
  CHECK(check(operation::messages, R"({"model":"m","max_tokens":1.5,"messages":[{}]})")->param ==
        "max_tokens");
  auto empty = check(operation::messages, R"({"model":"m","max_tokens":5,"messages":[]})");
  REQUIRE(empty);
  CHECK(empty->message == "messages: Input should have at least 1 item");
  CHECK(check(operation::messages, R"({"model":"m","max_tokens":5,"messages":{}})")->param ==
        "messages");
  CHECK(check(operation::messages, R"({"model":"","max_tokens":5,"messages":[{}]})")->param ==
        "model");
}

TEST_CASE("nested fields of the same name do not satisfy a rule") {
  auto r = check(operation::messages,
                 R"({"model":"m","messages":[{"max_tokens":5,"content":[{"max_tokens":1}]}]})");
  REQUIRE(r);
  CHECK(r->param == "max_tokens");
}

TEST_CASE("OpenAI routes check their own required fields") {
  CHECK_FALSE(check(operation::chat_completions, R"({"messages":[{"role":"user"}]})"));
  CHECK(check(operation::chat_completions, R"({"model":"m"})")->message ==
        "'messages': Field required");
  CHECK(check(operation::chat_completions, R"({"messages":[]})")->param == "messages");
  CHECK_FALSE(check(operation::completions, R"({"prompt":"x"})"));
  CHECK_FALSE(check(operation::completions, R"({"prompt":[1,2,3]})"));
  CHECK(check(operation::completions, R"({"prompt":5})")->param == "prompt");
  CHECK(check(operation::embeddings, R"({"model":"m"})")->param == "input");
  CHECK_FALSE(check(operation::responses_create, R"({"model":"m","input":"hi"})"));
  CHECK_FALSE(check(operation::responses_create, R"({"model":"m","previous_response_id":"r"})"));
  CHECK(check(operation::responses_create, R"({"input":7})")->param == "input");
}

TEST_CASE("operations without rules pass any object") {
  CHECK_FALSE(check(operation::generate, R"({"text":"hi"})"));
  CHECK_FALSE(check(operation::rerank, R"({})"));
  CHECK(check(operation::generate, "[1]")->code == error_code::bad_request);
}

TEST_CASE("the scan reports watched fields' kinds, integers and emptiness") {
  const std::string_view names[] = {"a", "b", "c", "d", "e", "f"};
  auto r =
      scan_request(R"({"a":[[]],"b":{},"c":"","d":18446744073709551615,"e":{"x":1},"z":1})", names);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.facts.fields.size() == 6);
  CHECK(r.facts.fields[0].kind == json_kind::array);
  CHECK_FALSE(r.facts.fields[0].empty);
  CHECK(r.facts.fields[1].kind == json_kind::object);
  CHECK(r.facts.fields[1].empty);
  CHECK(r.facts.fields[2].kind == json_kind::string);
  CHECK(r.facts.fields[2].empty);
  CHECK(r.facts.fields[3].kind == json_kind::integer);
  CHECK(r.facts.fields[3].integer == std::numeric_limits<std::int64_t>::max());
  CHECK_FALSE(r.facts.fields[4].empty);
  CHECK(r.facts.fields[5].kind == json_kind::absent);
}

TEST_CASE("the scan reads previous_response_id") {
  auto r = scan_request(R"({"model":"m","previous_response_id":"resp_1","input":"x"})");
  REQUIRE_FALSE(r.error);
  CHECK(r.facts.previous_response_id == "resp_1");
}

TEST_CASE("every operation speaks its provider's API") {
  CHECK(api_provider(operation::messages) == provider_kind::anthropic);
  CHECK(api_provider(operation::chat_completions) == provider_kind::openai);
  CHECK(api_provider(operation::responses_get) == provider_kind::openai);
  CHECK(api_provider(operation::generate) == provider_kind::none);
}
