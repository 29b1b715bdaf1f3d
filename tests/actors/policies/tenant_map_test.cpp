#include "actors/policies/tenant_map.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

namespace {

constexpr auto regular = protocol::worker_type::regular;

/// Worker id -> the entry its tenant names.
std::map<std::string, const worker_entry*> entries(const tenant_map& m) {
  std::map<std::string, const worker_entry*> out;
  m.each([&](const std::string& id, tenant_map::tenant t) { out[id] = m.entry(t); });
  return out;
}

} // namespace

TEST_CASE("tenant map: followed by changes, it agrees with one built from scratch") {
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    std::mt19937_64 rng{seed};
    fake_fleet f{20};
    int next = 20;
    tenant_map followed;
    std::set<std::string> forgotten;
    auto forget = [&](tenant_map::tenant, const std::string& id) { forgotten.insert(id); };
    followed.on_fleet(f.published(), regular, forget);
    std::map<std::string, tenant_map::tenant> kept; // a worker keeps its number while it stays
    followed.each([&](const std::string& id, tenant_map::tenant t) { kept[id] = t; });
    std::size_t peak = f.entries.size();
    for (int step = 0; step < 300; ++step) {
      std::set<std::string> removed;
      for (int j = 0, n = 1 + static_cast<int>(rng() % 4); j < n; ++j) {
        auto what = rng() % 3;
        if (what == 0 || f.entries.size() < 2) {
          f.add("w" + std::to_string(next++));
        } else {
          auto id = f.entries[rng() % f.entries.size()]->id;
          if (what == 1) {
            f.remove(id);
            if (kept.count(id)) {
              removed.insert(id); // not one added in this step: the map never saw it
            }
          } else {
            f.replace(id);
          }
        }
      }
      peak = std::max(peak, f.entries.size());
      forgotten.clear();
      followed.on_fleet(f.published(), regular, forget);
      CHECK(forgotten == removed);
      tenant_map fresh;
      fresh.on_fleet(f.snapshot(), regular, [](tenant_map::tenant, const std::string&) {});
      auto now = entries(followed);
      REQUIRE(now == entries(fresh));
      REQUIRE(now.size() == f.entries.size());
      for (auto& w : f.entries) {
        REQUIRE(now[w->id] == w.get());
        auto* t = followed.find(*w);
        REQUIRE(t);
        if (auto k = kept.find(w->id); k != kept.end()) {
          REQUIRE(*t == k->second);
        }
      }
      kept.clear();
      followed.each([&](const std::string& id, tenant_map::tenant t) { kept[id] = t; });
    }
    CHECK(followed.rebuilds() == 1);
    CHECK(followed.capacity() <= peak + 4); // numbers of workers gone are given again
  }
}

TEST_CASE("tenant map: a worker removed and registered again in one change keeps its cache") {
  fake_fleet f{2};
  tenant_map m;
  int forgets = 0;
  auto forget = [&](tenant_map::tenant, const std::string&) { ++forgets; };
  m.on_fleet(f.published(), regular, forget);
  auto before = *m.find("w1");
  f.remove("w1");
  f.add("w1");
  m.on_fleet(f.published(), regular, forget);
  CHECK(forgets == 0);
  CHECK(*m.find("w1") == before);
  CHECK(m.entry(before) == &f.at("w1"));
}
