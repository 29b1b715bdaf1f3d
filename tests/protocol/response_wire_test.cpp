#include "protocol/cluster_wire.hpp"
#include "protocol/response_wire.hpp"
#include "tests/protocol/wire_message.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;
using troupe::protocol::testing::with;

TEST_CASE("response updates round-trip: response ids and their workers") {
  response_update u;
  u.responses = {{"resp_1", "w-1"}, {"resp_2", "w-2"}};
  auto bytes = encode(with(u));
  std::string why;
  auto back = decode_message(bytes, why);
  REQUIRE(back);
  auto* got = std::get_if<response_update>(&back->body);
  REQUIRE(got);
  CHECK(got->responses == u.responses);
  CHECK(encode(*back) == bytes);
  CHECK(encoded_size(u) >= 4 * 5);
}

TEST_CASE("a hello says whether its sender reads response updates") {
  cluster_message m;
  m.from = "node-a";
  cluster_hello h;
  h.responses = true;
  m.body = h;
  std::string why;
  auto back = decode_message(encode(m), why);
  REQUIRE(back);
  CHECK(std::get<cluster_hello>(back->body).responses);
  m.body = cluster_hello{};
  back = decode_message(encode(m), why);
  REQUIRE(back);
  CHECK_FALSE(std::get<cluster_hello>(back->body).responses);
}

TEST_CASE("a response update naming no worker is refused, with the reason") {
  for (auto bad : {std::pair<std::string, std::string>{"resp_1", ""},
                   std::pair<std::string, std::string>{"", "w-1"}}) {
    response_update u;
    u.responses = {bad};
    std::string why;
    CHECK_FALSE(decode_message(encode(with(u)), why));
    CHECK(why.find("not (response id, worker id)") != std::string::npos);
  }
}

TEST_CASE("a long list of response ids is split into messages within the cap") {
  std::vector<std::pair<std::string, std::string>> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.emplace_back("resp_" + std::to_string(i) + std::string(40, 'x'),
                     "w-" + std::to_string(i % 3));
  }
  ids.emplace_back(std::string(5000, 'y'), "w-1"); // too long for any message
  auto all = ids;
  all.pop_back();
  std::size_t too_large = 0;
  constexpr std::size_t cap = 4096;
  auto parts = split_responses(ids, cap, too_large);
  CHECK(too_large == 1);
  REQUIRE(parts.size() > 1);
  std::vector<std::pair<std::string, std::string>> joined;
  for (auto& p : parts) {
    cluster_message m = with(p);
    auto whole = encode(m);
    auto body_only = whole.size() - encode(with(response_update{})).size();
    CHECK(body_only <= cap);
    CHECK(encoded_size(p) <= cap);
    joined.insert(joined.end(), p.responses.begin(), p.responses.end());
  }
  CHECK(joined == all);
}

TEST_CASE("a response update says it is a snapshot only when it is one") {
  response_update u{{{"resp_1", "w-1"}}, false};
  auto plain = encode(with(u));
  CHECK(plain.find("snap") == std::string::npos); // what older readers never see
  u.snapshot = true;
  std::string why;
  auto back = decode_message(encode(with(u)), why);
  REQUIRE(back);
  CHECK(std::get<response_update>(back->body).snapshot);
  CHECK(std::get<response_update>(back->body).responses == u.responses);
  auto old = decode_message(plain, why);
  REQUIRE(old);
  CHECK_FALSE(std::get<response_update>(old->body).snapshot);
}
