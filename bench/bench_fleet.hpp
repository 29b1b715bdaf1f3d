#pragma once

// A fleet of healthy regular workers for the benchmark programs that drive a strategy without
// actors (bench/policy_pick.cpp, bench/cache_aware_sample.cpp).

#include "actors/fleet.hpp"
#include "actors/policies/strategy.hpp"

#include <memory>
#include <string>
#include <vector>

namespace troupe::bench {

struct bench_fleet {
  /// Workers `w-0`..`w-{n-1}` in registration order, handed to `strat` as its fleet.
  bench_fleet(std::size_t n, actors::strategy& strat) {
    for (std::size_t i = 0; i < n; ++i) {
      auto w = std::make_shared<actors::worker_entry>();
      w->id = "w-" + std::to_string(i);
      w->spec.url = "http://10.0.0." + std::to_string(i) + ":8000";
      w->seq = i + 1;
      w->live = std::make_shared<actors::worker_live>();
      w->live->health = actors::health_state::healthy;
      entries.push_back(w);
      cands.push_back(w.get());
      snapshot.workers.push_back(w);
    }
    strat.on_fleet(snapshot, protocol::worker_type::regular);
  }

  std::vector<std::shared_ptr<actors::worker_entry>> entries;
  std::vector<const actors::worker_entry*> cands; ///< As a pick's candidates.
  actors::fleet_snapshot snapshot;
};

} // namespace troupe::bench
