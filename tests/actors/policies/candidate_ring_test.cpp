#include "actors/policies/candidate_ring.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

namespace {

constexpr auto regular = protocol::worker_type::regular;

/// The owner (an id) of each of 10,000 keys among all of `f`'s workers.
std::vector<std::string> owners(candidate_ring& ring, const fake_fleet& f) {
  auto cands = f.all();
  selection sel;
  std::vector<std::string> out;
  for (int i = 0; i < 10000; ++i) {
    auto k = ring.find("key-" + std::to_string(i), cands, sel);
    out.push_back(k == candidate_ring::npos ? "none" : cands[k]->id);
  }
  return out;
}

/// Random churn on `f` (add, remove, new model card), the ring following each published
/// snapshot by its change; then the ring must own every key as one built from scratch.
void churn(std::uint64_t seed, int start, int steps, int per_step) {
  std::mt19937_64 rng{seed};
  fake_fleet f{0};
  std::uint64_t seq = 0;
  int next = 0;
  auto add = [&] {
    auto& w = f.add("w" + std::to_string(next++));
    w.seq = ++seq;
  };
  for (int i = 0; i < start; ++i) {
    add();
  }
  candidate_ring followed;
  followed.on_fleet(f.published(), regular);
  for (int step = 0; step < steps; ++step) {
    for (int j = 0; j < per_step; ++j) {
      auto what = rng() % 3;
      if (what == 0 || f.entries.size() < 2) {
        add();
      } else {
        auto& victim = f.entries[rng() % f.entries.size()];
        if (what == 1) {
          f.remove(victim->id);
        } else {
          f.replace(victim->id);
        }
      }
    }
    followed.on_fleet(f.published(), regular);
    if (step % 50 == 49) {
      candidate_ring fresh;
      fresh.on_fleet(f.snapshot(), regular);
      REQUIRE(followed.members() == f.entries.size());
      REQUIRE(followed.points() == fresh.points());
      REQUIRE(owners(followed, f) == owners(fresh, f));
    }
  }
  CHECK(followed.rebuilds() == 1); // the first snapshot only: every change was applied
}

} // namespace

TEST_CASE("candidate ring: followed by changes, it owns every key as one built from scratch") {
  SECTION("small fleet, single changes") {
    churn(1, 8, 400, 1);
  }
  SECTION("small fleet, bursts") {
    churn(2, 4, 200, 7);
  }
  SECTION("a few hundred workers, past compactions") {
    churn(3, 300, 300, 3);
  }
}

TEST_CASE("candidate ring: two workers on one url; the one left stands for it") {
  fake_fleet f{0};
  auto& a = f.add("a");
  a.seq = 1;
  auto& b = f.add("b");
  b.seq = 2;
  b.spec.url = a.spec.url;
  auto& c = f.add("c");
  c.seq = 3;
  candidate_ring ring;
  ring.on_fleet(f.published(), regular);
  CHECK(ring.members() == 2);
  f.remove("a");
  ring.on_fleet(f.published(), regular);
  CHECK(ring.members() == 2);
  CHECK(ring.rebuilds() == 2); // which entry stands for the url is the fleet's to say
  auto cands = f.all();
  selection sel;
  int to_b = 0;
  for (int i = 0; i < 200; ++i) {
    auto k = ring.find("k" + std::to_string(i), cands, sel);
    REQUIRE(k != candidate_ring::npos);
    to_b += cands[k]->id == "b";
  }
  CHECK(to_b > 0);
  f.remove("b");
  ring.on_fleet(f.published(), regular);
  CHECK(ring.members() == 1);
  CHECK(ring.rebuilds() == 2);
}

TEST_CASE("candidate ring: a snapshot out of turn, or without its change, is taken in whole") {
  fake_fleet f{3};
  candidate_ring ring;
  ring.on_fleet(f.published(), regular);
  f.add("late");
  auto skipped = f.published(); // never shown to the ring
  f.remove("w0");
  ring.on_fleet(f.published(), regular);
  CHECK(ring.rebuilds() == 2);
  CHECK(ring.members() == 3);
  f.add("later");
  ring.on_fleet(f.snapshot(), regular);
  CHECK(ring.rebuilds() == 3);
  CHECK(ring.members() == 4);
}
