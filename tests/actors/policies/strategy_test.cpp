#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <vector>

using namespace troupe::actors;

namespace {

struct fleet_fixture {
  explicit fleet_fixture(int n) {
    for (int i = 0; i < n; ++i) {
      auto w = std::make_shared<worker_entry>();
      w->id = "w" + std::to_string(i);
      w->live = std::make_shared<worker_live>();
      w->live->health = health_state::healthy;
      entries.push_back(w);
      view.push_back(w.get());
    }
  }
  std::vector<std::shared_ptr<worker_entry>> entries;
  std::vector<const worker_entry*> view;
};

} // namespace

TEST_CASE("round robin visits every worker in turn") {
  fleet_fixture f{3};
  auto s = make_strategy("round_robin");
  selection sel;
  std::vector<std::size_t> picks;
  for (int i = 0; i < 6; ++i) {
    picks.push_back(s->pick(f.view, sel));
  }
  CHECK(picks == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("random spreads over all workers") {
  fleet_fixture f{4};
  auto s = make_strategy("random");
  selection sel;
  std::map<std::size_t, int> counts;
  for (int i = 0; i < 4000; ++i) {
    ++counts[s->pick(f.view, sel)];
  }
  REQUIRE(counts.size() == 4);
  for (auto& [k, n] : counts) {
    CHECK(n > 700);
  }
}

TEST_CASE("power of two never picks the most loaded of two workers") {
  fleet_fixture f{2};
  f.entries[0]->live->in_flight = 5;
  f.entries[1]->live->in_flight = 1;
  auto s = make_strategy("power_of_two");
  selection sel;
  for (int i = 0; i < 100; ++i) {
    CHECK(s->pick(f.view, sel) == 1);
  }
}

TEST_CASE("power of two avoids the most loaded of many workers") {
  fleet_fixture f{5};
  f.entries[3]->live->in_flight = 100;
  auto s = make_strategy("power_of_two");
  selection sel;
  for (int i = 0; i < 500; ++i) {
    CHECK(s->pick(f.view, sel) != 3);
  }
}

TEST_CASE("power of two counts the load other cluster members put on a worker") {
  fleet_fixture f{2};
  f.entries[0]->live->in_flight = 1;        // this node's own requests
  f.entries[0]->live->remote_in_flight = 6; // the other nodes' (cluster load reports)
  f.entries[1]->live->in_flight = 3;
  auto s = make_strategy("power_of_two");
  selection sel;
  for (int i = 0; i < 100; ++i) {
    CHECK(s->pick(f.view, sel) == 1);
  }
}

TEST_CASE("unknown strategy names are refused; every listed name exists") {
  CHECK_FALSE(make_strategy("cache_aware_typo"));
  for (auto& name : strategy_names()) {
    auto s = make_strategy(name);
    REQUIRE(s);
    CHECK(s->name() == name);
  }
}

TEST_CASE("pick_rng is SplitMix64: the published first outputs of seed 0, a seed's own stream") {
  pick_rng rng{0};
  CHECK(rng() == 0xe220a8397b1dcdafULL);
  CHECK(rng() == 0x6e789e6aa1b965f4ULL);
  CHECK(rng() == 0x06c45d188009454fULL);
  CHECK(rng() == 0xf88bb8a8724c81ecULL);
  pick_rng a{42};
  pick_rng b{42};
  pick_rng c{43};
  for (int i = 0; i < 100; ++i) {
    const auto x = a();
    CHECK(x == b());
    CHECK(x != c());
  }
  // Two engines seeded from the device do not repeat each other.
  auto d = pick_rng::seeded();
  auto e = pick_rng::seeded();
  CHECK(d() != e());
}

TEST_CASE("draw_index is uniform below n, for a small n and one that is not a power of two") {
  pick_rng rng{7};
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{10}, std::size_t{4000}}) {
    INFO("n " << n);
    std::vector<int> counts(n, 0);
    const int per_bin = 200;
    for (std::size_t i = 0; i < n * per_bin; ++i) {
      auto k = draw_index(rng, n);
      REQUIRE(k < n);
      ++counts[k];
    }
    // Each bin ~ Binomial(n x 200, 1/n): within 200 +- 7 sigma (sigma ~ 14).
    for (auto c : counts) {
      CHECK(c > per_bin - 100);
      CHECK(c < per_bin + 100);
    }
  }
}

TEST_CASE("eligible_sample: a large group's draws as drawn or listed, only eligible ones") {
  fleet_fixture f{100};
  for (int i = 0; i < 100; i += 2) {
    f.entries[static_cast<std::size_t>(i)]->live->health = health_state::unhealthy;
  }
  selection sel;
  sel.exclude = {"w1"}; // tried already
  pick_rng rng{11};
  std::vector<std::size_t> out;
  eligible_sample(f.view, sel, rng, out, 32, sample_order::drawn);
  CHECK(out.size() == 32); // every draw kept (an ineligible one redrawn), repeats and all
  for (auto k : out) {
    CHECK(k % 2 == 1);
    CHECK(k != 1);
  }
  eligible_sample(f.view, sel, rng, out, 32, sample_order::listed);
  CHECK(std::is_sorted(out.begin(), out.end()));
  CHECK(std::adjacent_find(out.begin(), out.end()) == out.end());
  CHECK(!out.empty());
  CHECK(out.size() <= 32);
  for (auto k : out) {
    CHECK(k % 2 == 1);
    CHECK(k != 1);
  }
  // A group of at most `max`: every eligible one, in list order, whatever the order asked.
  fleet_fixture small{6};
  small.entries[2]->live->health = health_state::unhealthy;
  eligible_sample(small.view, selection{}, rng, out, 32, sample_order::drawn);
  CHECK(out == std::vector<std::size_t>{0, 1, 3, 4, 5});
}
