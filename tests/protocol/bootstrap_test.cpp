#include "protocol/bootstrap.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

using namespace troupe::protocol;
using json = nlohmann::ordered_json;

namespace {

std::optional<std::size_t> batch_of(operation op, const char* body) {
  return bootstrap_batch_size(op, json::parse(body));
}

} // namespace

TEST_CASE("generate batches: a text list or a list of token lists") {
  CHECK(batch_of(operation::generate, R"({"text":["a","b","c"]})") == 3u);
  CHECK(batch_of(operation::generate, R"({"input_ids":[[1,2],[3]]})") == 2u);
  CHECK_FALSE(batch_of(operation::generate, R"({"text":"a"})"));
  CHECK_FALSE(batch_of(operation::generate, R"({"input_ids":[1,2,3]})"));
  CHECK_FALSE(batch_of(operation::generate, R"({"text":[]})"));
  CHECK_FALSE(batch_of(operation::generate, R"({"input_ids":[]})"));
}

TEST_CASE("chat batches on n > 1 only") {
  CHECK(batch_of(operation::chat_completions, R"({"messages":[],"n":4})") == 4u);
  CHECK_FALSE(batch_of(operation::chat_completions, R"({"messages":[],"n":1})"));
  CHECK_FALSE(batch_of(operation::chat_completions, R"({"messages":[]})"));
  CHECK_FALSE(batch_of(operation::chat_completions, R"({"n":null})"));
  CHECK_FALSE(batch_of(operation::chat_completions, R"({"n":"3"})"));
  CHECK_FALSE(batch_of(operation::chat_completions, R"({"n":-3})"));
}

TEST_CASE("completions batch on a prompt list, not on one tokenized prompt") {
  CHECK(batch_of(operation::completions, R"({"prompt":["a","b"]})") == 2u);
  CHECK(batch_of(operation::completions, R"({"prompt":[[1,2],[3,4],[5]]})") == 3u);
  CHECK_FALSE(batch_of(operation::completions, R"({"prompt":[1,2,3]})"));
  CHECK_FALSE(batch_of(operation::completions, R"({"prompt":"a"})"));
  CHECK_FALSE(batch_of(operation::completions, R"({"prompt":[]})"));
}

TEST_CASE("the other PD routes never batch") {
  for (auto op : {operation::rerank, operation::messages, operation::responses_create}) {
    CHECK_FALSE(batch_of(op, R"({"text":["a","b"],"n":3,"prompt":["x","y"]})"));
  }
}

TEST_CASE("single requests get scalar bootstrap fields") {
  room_source rooms{42};
  auto body = json::parse(R"({"model":"m","text":"hi"})");
  auto used = inject_bootstrap(body, std::nullopt, {"10.0.0.7", 8998}, rooms);
  REQUIRE(used.size() == 1);
  CHECK(body["bootstrap_host"] == "10.0.0.7");
  CHECK(body["bootstrap_port"] == 8998);
  CHECK(body["bootstrap_room"].get<std::uint64_t>() == used[0]);
}

TEST_CASE("a prefill without bootstrap port sends null") {
  room_source rooms{1};
  auto body = json::parse(R"({"text":"hi"})");
  inject_bootstrap(body, std::nullopt, {"h", std::nullopt}, rooms);
  CHECK(body["bootstrap_port"].is_null());
  REQUIRE(body.contains("bootstrap_port"));
}

TEST_CASE("batches get arrays of matching length with distinct rooms") {
  room_source rooms{7};
  auto body = json::parse(R"({"text":["a","b","c","d"]})");
  auto used = inject_bootstrap(body, 4, {"h", 9000}, rooms);
  REQUIRE(body["bootstrap_host"].size() == 4);
  REQUIRE(body["bootstrap_port"].size() == 4);
  REQUIRE(body["bootstrap_room"].size() == 4);
  std::set<std::uint64_t> distinct(used.begin(), used.end());
  CHECK(distinct.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(body["bootstrap_host"][i] == "h");
    CHECK(body["bootstrap_port"][i] == 9000);
    CHECK(body["bootstrap_room"][i].get<std::uint64_t>() == used[i]);
  }
}

TEST_CASE("injection touches nothing else and invents no field") {
  room_source rooms{3};
  auto text = std::string{R"({"z":1,"text":"hi","temperature":0.7,"x":{"y":[1,2.5,"é"]}})"};
  auto body = json::parse(text);
  inject_bootstrap(body, std::nullopt, {"h", 1}, rooms);
  auto out = json::parse(dump_body(body));
  for (auto key : {"bootstrap_host", "bootstrap_port", "bootstrap_room"}) {
    out.erase(key);
  }
  // Same fields, same values, same order: no `stream: null` or defaults appear.
  CHECK(dump_body(out) == text);
}

TEST_CASE("client-sent bootstrap fields are replaced") {
  room_source rooms{3};
  auto body = json::parse(R"({"bootstrap_host":"evil","bootstrap_room":5,"text":"x"})");
  auto used = inject_bootstrap(body, std::nullopt, {"h", 1}, rooms);
  CHECK(body["bootstrap_host"] == "h");
  CHECK(body["bootstrap_room"].get<std::uint64_t>() == used[0]);
}

TEST_CASE("rooms lie below 2^63 and do not repeat") {
  room_source rooms{0};
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 100000; ++i) {
    auto r = rooms.next();
    CHECK(r < (std::uint64_t{1} << 63));
    seen.insert(r);
  }
  CHECK(seen.size() == 100000);
  room_source a;
  room_source b;
  CHECK(a.next() != b.next());
}
