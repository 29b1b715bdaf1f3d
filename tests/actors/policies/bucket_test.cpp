#include "actors/policies/strategy.hpp"
#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using test::fake_fleet;
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

TEST_CASE("bucket: in a group larger than its sample, the imbalance test finds workers that "
          "took nothing") {
  policy_config cfg; // smg's thresholds: 64 bytes and 1.5x
  policy_fixture f{"bucket", cfg, 100};
  // Each pick looks at 32 random workers' bytes in the window. By range alone 100 prompts of
  // 500 bytes would all go to w12 (the range holding 500); once the sample holds a worker
  // that took some, the one that took nothing takes the prompt. Expected: ~6 picks by range
  // (the first ones, before a sample meets w12), ~90 workers in all.
  std::map<std::string, int> count;
  for (int i = 0; i < 100; ++i) {
    ++count[f.pick_prompt(std::string(500, 'x'))];
  }
  CHECK(count.size() >= 75);
  CHECK(f.state()["picks"]["imbalanced"] >= 75);
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

TEST_CASE("bucket: a fleet change moves only the ranges next to it") {
  policy_fixture f{"bucket", ranges_only(), 4}; // [0, 1023], [1024, 2047], [2048, 3071], ..
  CHECK(f.pick_prompt(std::string(3000, 'x')) == "w2");
  f.fleet.remove("w1"); // its range: half to w0, half to w2
  f.publish();
  CHECK(f.pick_prompt(std::string(10, 'x')) == "w0");
  CHECK(f.pick_prompt(std::string(1500, 'x')) == "w0");
  CHECK(f.pick_prompt(std::string(1600, 'x')) == "w2");
  CHECK(f.pick_prompt(std::string(3000, 'x')) == "w2");
  CHECK(f.pick_prompt(std::string(5000, 'x')) == "w3");
  f.fleet.add("w4"); // takes the upper half of the open range (as wide as the others: 1536)
  f.publish();
  CHECK(f.pick_prompt(std::string(3500, 'x')) == "w3");
  CHECK(f.pick_prompt(std::string(5000, 'x')) == "w4");
  CHECK(f.pick_prompt(std::string(3000, 'x')) == "w2");
  auto ranges = f.state()["models"]["m"]["ranges"];
  REQUIRE(ranges.size() == 4);
  CHECK(ranges[3]["from"] == 3840);
  CHECK(ranges[3]["to"].is_null());
}

TEST_CASE("bucket: the ranges follow the snapshots' changes, and keep those who stay") {
  std::uint64_t seed = GENERATE(11u, 12u);
  std::mt19937_64 rng{seed};
  fake_fleet fleet{0};
  // A clock that stands still: no interval ends, the ranges move by the fleet only.
  auto s = make_strategy("bucket", ranges_only(),
                         [] { return std::chrono::steady_clock::time_point{}; });
  int next = 0;
  auto add = [&] {
    auto& w = fleet.add("w" + std::to_string(next));
    w.seq = static_cast<std::uint64_t>(++next);
    w.models = {"m"};
  };
  for (int i = 0; i < 64; ++i) {
    add();
  }
  selection sel;
  sel.model = "m";
  std::string text;
  auto route = [&](std::size_t len) {
    text.assign(len, 'x');
    sel.prompt.parts = {text, {}};
    auto cands = fleet.all();
    auto k = s->pick(cands, sel);
    return k < cands.size() ? cands[k]->id : std::string{};
  };
  auto homes = [&] {
    std::map<std::size_t, std::string> out;
    for (std::size_t len = 0; len < 4096; len += 16) { // where the ranges are (the last is open)
      out[len] = route(len);
    }
    return out;
  };
  s->on_fleet(fleet.published(), protocol::worker_type::regular);
  for (int round = 0; round < 30; ++round) {
    auto before = homes();
    // A removal and an add in one change (as the policy composes them until its next pick).
    auto gone = fleet.entries[rng() % fleet.entries.size()]->id;
    fleet.remove(gone);
    add();
    auto added = fleet.entries.back()->id;
    s->on_fleet(fleet.published(), protocol::worker_type::regular);
    std::size_t moved = 0;
    for (auto& [len, who] : homes()) {
      CHECK(!who.empty());
      if (before[len] != gone && who != before[len]) {
        CHECK(who == added); // a staying worker lost lengths only to the new one
        ++moved;
      }
    }
    CHECK(moved < before.size() / 4); // not every key re-homed
  }
  auto ranges = s->describe()["models"]["m"]["ranges"];
  CHECK(ranges.size() == 64);
}
