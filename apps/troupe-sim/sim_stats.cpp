#include "apps/troupe-sim/sim_stats.hpp"

#include "apps/troupe-sim/kv_store.hpp"
#include "apps/troupe-sim/prefix_cache.hpp"

namespace troupe::sim {

namespace {

// Paths with ids (`/v1/responses/resp_...`) would grow the map without bound.
constexpr std::size_t max_paths = 1024;

} // namespace

void sim_stats::count(std::string_view path) {
  ++total;
  if (auto it = by_path.find(path); it != by_path.end()) {
    ++it->second;
  } else if (by_path.size() < max_paths) {
    by_path.emplace(std::string(path), 1);
  } else {
    ++by_path["(other)"];
  }
}

nlohmann::json sim_stats::to_json(const prefix_cache& cache, const kv_store& store) const {
  const auto& held = store.counters();
  return {
      {"active", active},
      {"total", total},
      {"by_path", by_path},
      {"cache", {{"blocks", cache.blocks()}, {"hits", cache.hits()}, {"misses", cache.misses()}}},
      {"rendezvous",
       {{"met", rendezvous.met},
        {"timeouts", rendezvous.timeouts},
        {"rejected", rendezvous.rejected},
        {"skipped", rendezvous.skipped},
        {"rooms", rendezvous.rooms}}},
      {"kv",
       {{"pinned_blocks", store.pinned_blocks()},
        {"pins", held.pins},
        {"sent_blocks", held.sent_blocks},
        {"expired_blocks", held.expired_blocks},
        {"refused_reads", held.refused_reads},
        {"fetches", kv.fetches},
        {"fetched_blocks", kv.fetched_blocks},
        {"fetch_failures", kv.fetch_failures},
        {"recomputed", kv.recomputed}}}};
}

} // namespace troupe::sim
