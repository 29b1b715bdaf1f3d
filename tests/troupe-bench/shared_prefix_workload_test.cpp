#include "apps/troupe-bench/shared_prefix_workload.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

using namespace troupe::bench;

namespace {

std::size_t word_count(const std::string& s) {
  std::istringstream in{s};
  std::size_t n = 0;
  for (std::string w; in >> w;) {
    ++n;
  }
  return n;
}

shared_prefix_shape small_shape() {
  shared_prefix_shape s;
  s.system_prompts = 3;
  s.system_prompt_tokens = 40;
  s.users = 5;
  s.turns = 3;
  s.user_tokens = 7;
  s.assistant_tokens = 9;
  s.seed = 42;
  return s;
}

} // namespace

TEST_CASE("lengths are the shape's, in words", "[shared_prefix]") {
  shared_prefix_workload w{small_shape()};
  auto p = w.make(2, 2);
  CHECK(word_count(p.system) == 40);
  REQUIRE(p.messages.size() == 5);
  CHECK(p.messages[0].role == "user");
  CHECK(p.messages[1].role == "assistant");
  CHECK(p.messages.back().role == "user");
  CHECK(word_count(p.messages[0].content) == 7);
  CHECK(word_count(p.messages[1].content) == 9);
  CHECK(p.key == "user-2");
}

TEST_CASE("a turn extends the user's previous turn", "[shared_prefix]") {
  shared_prefix_workload w{small_shape()};
  for (std::uint64_t u = 0; u < 5; ++u) {
    auto t0 = w.make(u, 0);
    auto t1 = w.make(u, 1);
    auto t2 = w.make(u, 2);
    CHECK(t1.system == t0.system);
    CHECK(t1.messages[0].content == t0.messages[0].content);
    CHECK(t2.messages[2].content == t1.messages[2].content);
    CHECK(t2.messages[1].content == t1.messages[1].content);
  }
}

TEST_CASE("users share only their system prompt; system prompts share nothing", "[shared_prefix]") {
  shared_prefix_workload w{small_shape()};
  std::set<std::string> systems;
  for (std::size_t i = 0; i < 3; ++i) {
    systems.insert(w.system_prompt(i).substr(0, w.system_prompt(i).find(' ')));
  }
  CHECK(systems.size() == 3); // distinct first words
  CHECK(w.make(0, 0).messages[0].content != w.make(1, 0).messages[0].content);
  CHECK(w.make(0, 0).system == w.system_prompt(w.system_of(0)));
}

TEST_CASE("requests come turn by turn, every user once per turn, then a new round",
          "[shared_prefix]") {
  auto shape = small_shape();
  shared_prefix_workload w{shape};
  for (std::size_t turn = 0; turn < shape.turns; ++turn) {
    std::set<std::string> users;
    for (std::size_t i = 0; i < shape.users; ++i) {
      auto p = w.next();
      CHECK(p.messages.size() == 2 * turn + 1);
      users.insert(p.key);
    }
    CHECK(users.size() == shape.users);
  }
  // Round two: new users (ids 5..9), first turns.
  auto p = w.next();
  CHECK(p.messages.size() == 1);
  auto id = std::stoul(p.key.substr(5));
  CHECK(id >= 5);
  CHECK(id < 10);
}

TEST_CASE("the same seed makes the same prompts, another seed others", "[shared_prefix]") {
  shared_prefix_workload a{small_shape()}, b{small_shape()};
  auto other = small_shape();
  other.seed = 43;
  shared_prefix_workload c{other};
  for (int i = 0; i < 20; ++i) {
    auto x = a.next();
    auto y = b.next();
    CHECK(x.system == y.system);
    CHECK(x.messages.back().content == y.messages.back().content);
  }
  CHECK(c.system_prompt(0) != a.system_prompt(0));
}

TEST_CASE("no system prompt when there are none", "[shared_prefix]") {
  auto shape = small_shape();
  shape.system_prompts = 0;
  shared_prefix_workload w{shape};
  CHECK(w.next().system.empty());
}

TEST_CASE("zipf popularity: uniform at 0, 1/(i+1)^s otherwise", "[shared_prefix]") {
  zipf_sampler flat{4, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(flat.probability(i) == Approx(0.25));
  }
  zipf_sampler z{3, 1};
  // 1 : 1/2 : 1/3, normalised by 11/6.
  CHECK(z.probability(0) == Approx(6.0 / 11));
  CHECK(z.probability(1) == Approx(3.0 / 11));
  CHECK(z.probability(2) == Approx(2.0 / 11));
  CHECK(z(0.0) == 0);
  CHECK(z(0.5) == 0);
  CHECK(z(0.6) == 1);
  CHECK(z(0.9) == 2);
  CHECK(z(0.999999) == 2);
}

TEST_CASE("skewed users crowd onto the popular system prompts", "[shared_prefix]") {
  auto shape = small_shape();
  shape.system_prompts = 4;
  shape.skew = 2.0;
  shared_prefix_workload w{shape};
  std::map<std::size_t, int> users_of;
  for (std::uint64_t u = 0; u < 4000; ++u) {
    ++users_of[w.system_of(u)];
  }
  // p = 1, 1/4, 1/9, 1/16 over 1.4236: 70%, 18%, 8%, 4%.
  CHECK(users_of[0] / 4000.0 == Approx(0.702).margin(0.03));
  CHECK(users_of[1] / 4000.0 == Approx(0.176).margin(0.03));
  CHECK(users_of[0] > users_of[1]);
  CHECK(users_of[1] > users_of[2]);
  CHECK(users_of[2] > users_of[3]);
}
