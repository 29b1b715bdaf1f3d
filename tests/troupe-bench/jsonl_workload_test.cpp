#include "apps/troupe-bench/jsonl_workload.hpp"

#include <catch2/catch.hpp>
#include <sstream>

using namespace troupe::bench;

namespace {

std::unique_ptr<jsonl_workload> read(const std::string& text, std::string& why) {
  std::istringstream in{text};
  return jsonl_workload::read(in, "p.jsonl", why);
}

} // namespace

TEST_CASE("prompt, messages and body lines; blank lines skipped; cycled", "[jsonl]") {
  std::string why;
  auto w = read(
      R"({"prompt": "hello", "system": "be brief", "max_tokens": 7, "user": "u1"}

{"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
)"
      R"({"role": "assistant", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "p1"}, {"type": "text", "text": "p2"}]}]}
{"body": {"messages": [{"role": "user", "content": "raw"}], "n": 2}}
)",
      why);
  // The messages line above is split in two: not valid JSON.
  CHECK(w == nullptr);
  CHECK(why == "p.jsonl:3: not valid JSON");

  w = read(R"({"prompt": "hello", "system": "be brief", "max_tokens": 7, "user": "u1"}

{"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "p1"}, {"type": "text", "text": "p2"}]}]}
{"body": {"messages": [{"role": "user", "content": "raw"}], "n": 2}}
)",
           why);
  REQUIRE(w);
  CHECK(w->size() == 3);
  auto a = w->next();
  CHECK(a.system == "be brief");
  REQUIRE(a.messages.size() == 1);
  CHECK(a.messages[0].content == "hello");
  CHECK(a.max_tokens == 7);
  CHECK(a.key == "u1");
  auto b = w->next();
  CHECK(b.system == "sys");
  REQUIRE(b.messages.size() == 3);
  CHECK(b.messages[1].role == "assistant");
  CHECK(b.messages[2].content == "p1\np2");
  auto c = w->next();
  REQUIRE(c.body);
  CHECK((*c.body)["n"] == 2);
  CHECK(w->next().messages[0].content == "hello"); // cycled
}

TEST_CASE("bad lines are refused with their line number and reason", "[jsonl]") {
  std::string why;
  CHECK_FALSE(read("", why));
  CHECK(why == "p.jsonl: no prompt in the file");
  CHECK_FALSE(read("{\"prompt\": \"a\"}\n[1, 2]\n", why));
  CHECK(why == "p.jsonl:2: expected a JSON object");
  CHECK_FALSE(read("{\"text\": \"a\"}\n", why));
  CHECK(why == "p.jsonl:1: a line needs \"prompt\", \"messages\" or \"body\"");
  CHECK_FALSE(read("{\"prompt\": \"a\", \"max_tokens\": 0}\n", why));
  CHECK(why == "p.jsonl:1: \"max_tokens\" must be a positive integer");
  CHECK_FALSE(read(R"({"messages": [{"role": "tool", "content": "x"}]})", why));
  CHECK(why == "p.jsonl:1: unsupported role \"tool\" (system, user or assistant)");
  CHECK_FALSE(read(
      R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})",
      why));
  CHECK(why == "p.jsonl:1: the conversation must end with a user message");
  CHECK_FALSE(read(R"({"messages": [{"role": "user", "content": 5}]})", why));
  CHECK(why == "p.jsonl:1: message content must be a string or a list of text parts");
}
