#include "actors/fleet_change_log.hpp"
#include "actors/policies/candidate_ring.hpp"
#include "actors/policies/tenant_map.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

TEST_CASE("fleet change log: an entry that comes and goes is in neither list") {
  fake_fleet f{2};
  fleet_change_log log;
  log.notified(7);
  auto& a = f.add("a");
  log.added(a);
  log.removed(f.at("w0"));
  log.removed(a);
  auto c = log.change();
  REQUIRE(c);
  CHECK(c->from == 7);
  CHECK(c->added.empty());
  REQUIRE(c->removed.size() == 1);
  CHECK(c->removed[0].id == "w0");
  CHECK(c->removed[0].url == "http://w0:8000");
  log.lose();
  CHECK_FALSE(log.change());
  log.notified(8);
  CHECK(log.change()->from == 8);
  CHECK(log.size() == 0);
}

TEST_CASE("fleet change log: the changes of several snapshots, composed, apply as one") {
  for (std::uint64_t seed : {21u, 22u, 23u}) {
    std::mt19937_64 rng{seed};
    fake_fleet f{0};
    std::uint64_t seq = 0;
    int next = 0;
    auto add = [&] { f.add("w" + std::to_string(next++)).seq = ++seq; };
    for (int i = 0; i < 30; ++i) {
      add();
    }
    candidate_ring ring;
    tenant_map tenants;
    auto ignore = [](tenant_map::tenant, const std::string&) {};
    auto first = f.published();
    ring.on_fleet(first, protocol::worker_type::regular);
    tenants.on_fleet(first, protocol::worker_type::regular, ignore);
    for (int round = 0; round < 40; ++round) {
      // Several snapshots the strategy does not see one by one: the policy composes them.
      fleet_change_log pending;
      pending.notified(first.version);
      fleet_snapshot last;
      for (int s = 0, n = 1 + static_cast<int>(rng() % 5); s < n; ++s) {
        for (int j = 0, m = 1 + static_cast<int>(rng() % 4); j < m; ++j) {
          auto what = rng() % 3;
          if (what == 0 || f.entries.size() < 2) {
            add();
          } else if (what == 1) {
            f.remove(f.entries[rng() % f.entries.size()]->id);
          } else {
            f.replace(f.entries[rng() % f.entries.size()]->id);
          }
        }
        last = f.published();
        pending.merge(*last.change);
      }
      auto composed = pending.change();
      ring.on_fleet(last, composed.get(), protocol::worker_type::regular);
      tenants.on_fleet(last, composed.get(), protocol::worker_type::regular, ignore);
      first = last;
      candidate_ring fresh;
      fresh.on_fleet(f.snapshot(), protocol::worker_type::regular);
      auto cands = f.all();
      selection sel;
      for (int k = 0; k < 500; ++k) {
        auto key = "k" + std::to_string(k);
        REQUIRE(ring.find(key, cands, sel) == fresh.find(key, cands, sel));
      }
      for (auto& w : f.entries) {
        auto* t = tenants.find(*w);
        REQUIRE(t);
        REQUIRE(tenants.entry(*t) == w.get());
      }
    }
    CHECK(ring.rebuilds() == 1);
    CHECK(tenants.rebuilds() == 1);
  }
}
