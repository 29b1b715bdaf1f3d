#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <set>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using test::policy_fixture;

namespace {

policy_config with_mode(std::string mode, std::chrono::seconds idle = 14400s) {
  policy_config cfg;
  cfg.assignment_mode = std::move(mode);
  cfg.max_idle = idle;
  return cfg;
}

} // namespace

TEST_CASE("manual: a routing key sticks to its first worker; keys spread at random") {
  policy_fixture f{"manual", with_mode("random"), 4};
  std::map<std::string, std::string> first;
  std::set<std::string> used;
  for (int i = 0; i < 200; ++i) {
    auto key = "user-" + std::to_string(i);
    first[key] = f.pick_key(key);
    used.insert(first[key]);
  }
  CHECK(used.size() == 4);
  for (auto& [key, w] : first) {
    CHECK(f.pick_key(key) == w);
  }
  auto st = f.state();
  CHECK(st["routing_keys"] == 200);
  CHECK(st["picks"]["sticky"] == 200);
  CHECK(st["picks"]["new_key"] == 200);
}

TEST_CASE("manual: a new worker moves no key (unlike a hash ring)") {
  policy_fixture f{"manual", with_mode("random"), 3};
  std::map<std::string, std::string> before;
  for (int i = 0; i < 100; ++i) {
    before["k" + std::to_string(i)] = f.pick_key("k" + std::to_string(i));
  }
  f.fleet.add("w3");
  f.publish();
  for (auto& [key, w] : before) {
    CHECK(f.pick_key(key) == w);
  }
}

TEST_CASE("manual: a key whose worker is down moves, and comes back when it recovers") {
  policy_fixture f{"manual", with_mode("min_load"), 3};
  auto home = f.pick_key("session");
  f.fleet.at(home).live->health = health_state::unhealthy;
  auto stand_in = f.pick_key("session");
  CHECK(stand_in != home);
  CHECK(f.pick_key("session") == stand_in); // stays with the stand-in while home is down
  f.fleet.at(home).live->health = health_state::healthy;
  CHECK(f.pick_key("session") == home);
  CHECK(f.state()["picks"]["reassigned"] == 1);
}

TEST_CASE("manual: a key idle for --max-idle-secs is forgotten, exactly then") {
  policy_fixture f{"manual", with_mode("min_load", 60s), 2};
  auto w = f.pick_key("idle");
  f.fleet.at(w).live->in_flight = 5; // a new assignment would now go to the other worker
  f.advance(59s);
  CHECK(f.pick_key("idle") == w); // used again: idle time starts over
  f.advance(59s);
  CHECK(f.state()["routing_keys"] == 1);
  f.advance(1s);
  CHECK(f.pick_key("other") != w); // every pick drops the expired keys first
  auto st = f.state();
  CHECK(st["expired"] == 1);
  CHECK(st["routing_keys"] == 1);
  CHECK(f.pick_key("idle") != w); // reassigned afresh, by load
}

TEST_CASE("manual: min_group gives a new key to the worker serving fewest keys") {
  policy_fixture f{"manual", with_mode("min_group"), 3};
  std::map<std::string, int> count;
  for (int i = 0; i < 30; ++i) {
    ++count[f.pick_key("k" + std::to_string(i))];
  }
  CHECK(count == std::map<std::string, int>{{"w0", 10}, {"w1", 10}, {"w2", 10}});
  CHECK(f.state()["keys_by_worker"]["w1"] == 10);
}

TEST_CASE("manual: without a routing key, the assignment mode picks") {
  policy_fixture f{"manual", with_mode("min_load"), 2};
  f.fleet.at("w0").live->in_flight = 3;
  CHECK(f.pick(selection{}) == "w1");
  CHECK(f.state()["picks"]["no_key"] == 1);
  CHECK(f.state()["routing_keys"] == 0);
}

TEST_CASE("manual: the keys kept are bounded, least recently used dropped first") {
  auto cfg = with_mode("random");
  cfg.max_routing_keys = 3;
  policy_fixture f{"manual", cfg, 2};
  for (auto k : {"a", "b", "c"}) {
    f.pick_key(k);
  }
  f.pick_key("a"); // a is used again: b is now the oldest
  f.pick_key("d");
  auto st = f.state();
  CHECK(st["routing_keys"] == 3);
  CHECK(st["dropped"] == 1);
  CHECK(st["picks"]["sticky"] == 1);
  f.pick_key("a");
  CHECK(f.state()["picks"]["sticky"] == 2); // a survived, b did not
}
