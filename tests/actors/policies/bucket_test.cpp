#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using test::policy_fixture;

namespace {

/// Thresholds so high that the window's balance never overrides the ranges.
policy_config ranges_only() {
  policy_config cfg;
  cfg.balance_abs_threshold = std::size_t{1} << 40;
  return cfg;
}

} // namespace

TEST_CASE("bucket: prompt lengths split 0..4096 evenly at first") {
  policy_fixture f{"bucket", ranges_only(), 4}; // ranges of 1024 bytes
  CHECK(f.pick_prompt(std::string(10, 'x')) == "w0");
  CHECK(f.pick_prompt(std::string(1500, 'x')) == "w1");
  CHECK(f.pick_prompt(std::string(2500, 'x')) == "w2");
  CHECK(f.pick_prompt(std::string(100000, 'x')) == "w3");
  CHECK(f.pick(selection{}) == "w0"); // no prompt: length 0
  auto ranges = f.state()["models"]["m"]["ranges"];
  CHECK(ranges[1]["from"] == 1024);
  CHECK(ranges[1]["to"] == 2047);
  CHECK(ranges[3]["to"].is_null());
}

TEST_CASE("bucket: every interval the ranges are fitted so each worker takes a like share") {
  policy_fixture f{"bucket", ranges_only(), 2};
  // All traffic is short: with even ranges (0..2047, 2048..) one worker takes everything.
  for (int i = 0; i < 50; ++i) {
    CHECK(f.pick_prompt(std::string(100 + i * 4, 'x')) == "w0");
  }
  f.advance(5s); // the adjust interval: the next pick fits the ranges to the last 5 s
  std::map<std::string, int> count;
  for (int i = 0; i < 50; ++i) {
    ++count[f.pick_prompt(std::string(100 + i * 4, 'x'))];
  }
  CHECK(count["w0"] > 15);
  CHECK(count["w1"] > 15);
  // Longer prompts still go to the worker of the upper range.
  CHECK(f.pick_prompt(std::string(290, 'x')) == "w1");
  CHECK(f.pick_prompt(std::string(101, 'x')) == "w0");
}

TEST_CASE("bucket: an imbalanced window sends the request to the worker that took least") {
  policy_config cfg; // smg's thresholds: 64 bytes and 1.5x
  policy_fixture f{"bucket", cfg, 2};
  CHECK(f.pick_prompt(std::string(500, 'x')) == "w0");
  // w0 took 500 bytes, w1 none: imbalanced, so this short prompt goes to w1 after all.
  CHECK(f.pick_prompt(std::string(200, 'x')) == "w1");
  CHECK(f.state()["picks"]["imbalanced"] == 1);
  f.advance(6s); // the window is empty again: balanced, the ranges decide
  CHECK(f.pick_prompt(std::string(10, 'x')) == "w0");
}

TEST_CASE("bucket: a range whose worker is down passes to the nearest range") {
  policy_fixture f{"bucket", ranges_only(), 4};
  f.fleet.at("w1").live->health = health_state::unhealthy;
  auto w = f.pick_prompt(std::string(1500, 'x'));
  CHECK((w == "w0" || w == "w2"));
  f.fleet.at("w1").live->health = health_state::healthy;
  CHECK(f.pick_prompt(std::string(1500, 'x')) == "w1");
}

TEST_CASE("bucket: a fleet change starts the ranges over") {
  policy_fixture f{"bucket", ranges_only(), 2};
  CHECK(f.pick_prompt(std::string(3000, 'x')) == "w1");
  f.fleet.add("w2");
  f.fleet.add("w3");
  f.publish();
  CHECK(f.pick_prompt(std::string(3000, 'x')) == "w2"); // 4 ranges of 1024 now
}
