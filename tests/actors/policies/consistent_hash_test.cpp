#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

namespace {

std::string pick_for_key(strategy& s, const std::vector<const worker_entry*>& cands,
                         const std::string& key) {
  selection sel;
  sel.routing_key = key;
  return cands[s.pick(cands, sel)]->id;
}

/// The worker of each of `n` keys.
std::vector<std::string> route(strategy& s, const std::vector<const worker_entry*>& cands,
                               int n = 2000) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(pick_for_key(s, cands, "user-" + std::to_string(i)));
  }
  return out;
}

} // namespace

TEST_CASE("consistent hash: a key always lands on the same worker; keys spread") {
  fake_fleet f{3};
  auto s = make_strategy("consistent_hash");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  auto first = pick_for_key(*s, cands, "session-42");
  for (int i = 0; i < 20; ++i) {
    CHECK(pick_for_key(*s, cands, "session-42") == first);
  }
  std::map<std::string, int> count;
  for (auto& w : route(*s, cands, 3000)) {
    ++count[w];
  }
  REQUIRE(count.size() == 3);
  for (auto& [id, n] : count) {
    CHECK(n > 700);
  }
  auto d = s->describe();
  CHECK(d["ring_points"] == 3 * 160);
  CHECK(d["picks"]["routing_key"] == 3021);
}

TEST_CASE("consistent hash: a new worker takes ~1/N of the keys and moves no others") {
  fake_fleet f{4};
  auto s = make_strategy("consistent_hash");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto before = route(*s, f.all());
  f.add("w4");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto after = route(*s, f.all());
  int moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] != after[i]) {
      ++moved;
      REQUIRE(after[i] == "w4");
    }
  }
  CHECK(moved > 2000 / 5 * 7 / 10);
  CHECK(moved < 2000 / 5 * 13 / 10);
  // Removed again: every key is back where it was.
  f.remove("w4");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  CHECK(route(*s, f.all()) == before);
}

TEST_CASE("consistent hash: a worker that cannot take a request passes only its own keys on") {
  fake_fleet f{4};
  auto s = make_strategy("consistent_hash");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto before = route(*s, f.all());
  // w2 unhealthy (not a candidate): its keys walk on to the next workers on the ring...
  auto during = route(*s, f.only({"w0", "w1", "w3"}));
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] != "w2") {
      REQUIRE(during[i] == before[i]);
    } else {
      REQUIRE(during[i] != "w2");
    }
  }
  // ...and come back when it recovers.
  CHECK(route(*s, f.all()) == before);
}

TEST_CASE("consistent hash: the ring is the same whatever order the fleet lists workers in") {
  fake_fleet f{4};
  auto s = make_strategy("consistent_hash");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto before = route(*s, f.all());
  // Another node, which registered the same workers the other way round: its snapshot and
  // candidate lists go w3..w0 (in its registration order, as a node's always do).
  fake_fleet g{0};
  for (int i = 3; i >= 0; --i) {
    g.add("w" + std::to_string(i));
  }
  auto other = make_strategy("consistent_hashing"); // smg's name
  other->on_fleet(g.snapshot(), protocol::worker_type::regular);
  CHECK(route(*other, g.all()) == before);
}

TEST_CASE("consistent hash: without a key, the less loaded of two (power of two)") {
  fake_fleet f{2};
  auto s = make_strategy("consistent_hash");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  f.at("w0").live->in_flight = 4;
  auto cands = f.all();
  for (int i = 0; i < 20; ++i) {
    CHECK(cands[s->pick(cands, selection{})]->id == "w1");
  }
  CHECK(s->describe()["picks"]["without_key"] == 20);
}
