#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using test::policy_fixture;

namespace {

std::string prompt(int system, const std::string& tail) {
  return "[{\"role\":\"system\",\"content\":\"system prompt " + std::to_string(system) + " " +
         std::string(1200, 's') + "\"},{\"role\":\"user\",\"content\":\"" + tail + "\"}]";
}

} // namespace

TEST_CASE("prefix hash: prompts sharing their head go to one worker; heads spread") {
  policy_fixture f{"prefix_hash", {}, 4};
  std::set<std::string> homes;
  for (int s = 0; s < 40; ++s) {
    auto home = f.pick_prompt(prompt(s, "first question"));
    CHECK(f.pick_prompt(prompt(s, "another question")) == home); // the tail is past 1024 bytes
    homes.insert(home);
  }
  CHECK(homes.size() == 4);
  CHECK(f.state()["picks"]["ring_hit"] == 80);
}

TEST_CASE("prefix hash: an overloaded owner passes the request to the least loaded") {
  policy_fixture f{"prefix_hash", {}, 3};
  auto home = f.pick_prompt(prompt(1, "q"));
  // Mean (20+1)/3 = 7: the owner is overloaded above max(1.25 x 7, 7 + 10) = 17.
  f.fleet.at(home).live->in_flight = 18;
  f.fleet.at(home == "w0" ? "w1" : "w0").live->in_flight = 2;
  auto other = f.pick_prompt(prompt(1, "q"));
  CHECK(other != home);
  CHECK(f.fleet.at(other).live->in_flight.load() == 0);
  CHECK(f.state()["picks"]["load_walk"] == 1);
  // Mean (16+2+1)/3 = 6.3: the threshold is 16.3, and 16 is below it.
  f.fleet.at(home).live->in_flight = 16;
  CHECK(f.pick_prompt(prompt(1, "q")) == home);
}

TEST_CASE("prefix hash: a routing key takes the prompt's place; no key, no prompt: least loaded") {
  policy_fixture f{"prefix_hash", {}, 3};
  auto a = f.pick_key("user-7");
  for (int i = 0; i < 10; ++i) {
    CHECK(f.pick_key("user-7") == a);
  }
  f.fleet.at("w0").live->in_flight = 1;
  f.fleet.at("w2").live->in_flight = 1;
  CHECK(f.pick(selection{}) == "w1");
  CHECK(f.state()["picks"]["no_key"] == 1);
}

TEST_CASE("prefix hash: --cache-boundaries hash the deepest head the prompt reaches") {
  policy_config cfg;
  cfg.cache_boundaries = {64, 16}; // 256 and 64 bytes
  policy_fixture f{"prefix_hash", cfg, 8};
  const std::string head(256, 'h');
  // Prompts alike for 256 bytes: one home, whatever follows.
  auto home = f.pick_prompt(head + "tail one");
  CHECK(f.pick_prompt(head + "tail two, longer") == home);
  // A prompt of 100 bytes reaches only the 64-byte boundary.
  auto shorter = f.pick_prompt(std::string(100, 'h'));
  CHECK(f.pick_prompt(std::string(64, 'h') + std::string(36, 'z')) == shorter);
}

TEST_CASE("prefix hash: a head's worker is the same on every gateway node") {
  policy_fixture a{"prefix_hash", {}, 5};
  policy_fixture b{"prefix_hash", {}, 5};
  for (int s = 0; s < 20; ++s) {
    CHECK(a.pick_prompt(prompt(s, "x")) == b.pick_prompt(prompt(s, "y")));
  }
}
