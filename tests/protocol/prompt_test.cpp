#include "protocol/prompt.hpp"
#include "protocol/validation.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

using namespace troupe::protocol;

namespace {

prompt_spans prompt_of(operation op, const std::string& body) {
  auto scan = scan_and_validate(op, body);
  REQUIRE_FALSE(scan.error);
  return find_prompt(op, scan.facts, body);
}

} // namespace

TEST_CASE("every prompt field is watched by the scan of its operation") {
  for (auto op : {operation::generate, operation::chat_completions, operation::completions,
                  operation::embeddings, operation::rerank, operation::messages,
                  operation::responses_create, operation::get_model_info}) {
    auto watched = watched_fields(op);
    for (auto name : prompt_fields(op)) {
      INFO(info(op).name << " " << name);
      CHECK(std::find(watched.begin(), watched.end(), name) != watched.end());
    }
  }
}

TEST_CASE("the prompt is the raw JSON of the conversation, not the other fields") {
  std::string body =
      R"({"model":"m","temperature":0.5,"messages":[{"role":"user","content":"caf\u00e9 \"x\""}],"max_tokens":4})";
  auto p = prompt_of(operation::chat_completions, body);
  CHECK(p.parts[0] == R"([{"role":"user","content":"caf\u00e9 \"x\""}])");
  CHECK(p.parts[1].empty());
  CHECK(p.size() == p.parts[0].size());
}

TEST_CASE("Anthropic system text comes before the messages, wherever it is in the body") {
  std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"model":"m","max_tokens":4,"system":"be brief"})";
  auto p = prompt_of(operation::messages, body);
  CHECK(p.parts[0] == R"("be brief")");
  CHECK(p.parts[1] == R"([{"role":"user","content":"hi"}])");
}

TEST_CASE("Responses instructions and input; generate text or input_ids; completions prompt") {
  // The spans are views into the body: each body outlives its checks.
  std::string responses = R"({"model":"m","input":"hello","instructions":"sys"})";
  auto r = prompt_of(operation::responses_create, responses);
  CHECK(r.parts[0] == R"("sys")");
  CHECK(r.parts[1] == R"("hello")");
  std::string ids = R"({"input_ids":[1, 2, 3],"sampling_params":{}})";
  auto g = prompt_of(operation::generate, ids);
  CHECK(g.parts[0] == "[1, 2, 3]");
  CHECK(g.parts[1].empty());
  std::string text = R"({"text":"once upon"})";
  CHECK(prompt_of(operation::generate, text).parts[0] == R"("once upon")");
  std::string completions = R"({"prompt":["a","b"],"model":"m"})";
  CHECK(prompt_of(operation::completions, completions).parts[0] == R"(["a","b"])");
}

TEST_CASE("no prompt: absent or null fields, operations without one") {
  std::string continued = R"({"model":"m","previous_response_id":"r"})";
  CHECK(prompt_of(operation::responses_create, continued).empty());
  std::string null_text = R"({"text":null,"input_ids":[7]})";
  CHECK(prompt_of(operation::generate, null_text).parts[0] == "[7]");
  std::string embeddings = R"({"model":"m","input":"x"})";
  CHECK(prompt_of(operation::embeddings, embeddings).empty());
}
