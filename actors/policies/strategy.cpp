#include "actors/policies/strategy.hpp"

#include "actors/policies/selection.hpp"

#include <algorithm>

namespace troupe::actors {

pick_rng& thread_rng() {
  thread_local pick_rng rng = pick_rng::seeded();
  return rng;
}

bool eligible(const worker_entry& w, const selection& sel) {
  return w.live->routable() &&
         (sel.exclude.empty() ||
          std::find(sel.exclude.begin(), sel.exclude.end(), w.id) == sel.exclude.end());
}

std::size_t random_eligible(const std::vector<const worker_entry*>& c, const selection& sel,
                            pick_rng& rng, std::size_t skip) {
  const auto n = c.size();
  if (n == 0 || (n == 1 && skip == 0)) {
    return strategy::npos;
  }
  // Draws: with a share e of the candidates eligible, 8 draws all miss with (1 - e)^8.
  for (int i = 0; i < 8; ++i) {
    auto k = draw_index(rng, n);
    if (k != skip && eligible(*c[k], sel)) {
      return k;
    }
  }
  // Few are eligible: the k-th of them, k uniform, found in one pass from a random start.
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    count += i != skip && eligible(*c[i], sel) ? 1 : 0;
  }
  if (count == 0) {
    return strategy::npos;
  }
  auto target = draw_index(rng, count);
  for (std::size_t i = 0; i < n; ++i) {
    if (i != skip && eligible(*c[i], sel) && target-- == 0) {
      return i;
    }
  }
  return strategy::npos;
}

bool eligible_sample(const std::vector<const worker_entry*>& c, const selection& sel, pick_rng& rng,
                     std::vector<std::size_t>& out, std::size_t max, sample_order order) {
  out.clear();
  if (c.size() <= max) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (eligible(*c[i], sel)) {
        out.push_back(i);
      }
    }
    return false;
  }
  // Each slot is a uniform draw, kept when eligible, else a uniform eligible candidate
  // (`random_eligible`): the same distribution as drawing until eligible. The draws come first
  // and their workers' state is prefetched in two waves (the entry's `live` pointer, then the
  // live state it points to), so a large fleet's `max` cold workers cost about two memory
  // latencies instead of two per candidate (perf at 4,000 workers: `eligible` was ~7% of the
  // gateway's samples for cache_aware).
  for (std::size_t i = 0; i < max; ++i) {
    out.push_back(draw_index(rng, c.size()));
    __builtin_prefetch(&c[out.back()]->live);
  }
  for (auto k : out) {
    __builtin_prefetch(c[k]->live.get());
  }
  for (auto& k : out) {
    if (!eligible(*c[k], sel)) {
      k = random_eligible(c, sel, rng); // npos when none is eligible (dropped below)
    }
  }
  out.erase(std::remove(out.begin(), out.end(), strategy::npos), out.end());
  if (order == sample_order::drawn) {
    return true;
  }
  // In list order, so ties go to the first candidate, as in a scan of the list.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return true;
}

std::unique_ptr<strategy> make_strategy(std::string_view name, const policy_config& cfg,
                                        clock_fn now) {
  if (!now) {
    now = [] { return std::chrono::steady_clock::now(); };
  }
  if (name == "round_robin") {
    return make_round_robin();
  }
  if (name == "random") {
    return make_random();
  }
  if (name == "power_of_two") {
    return make_power_of_two();
  }
  if (name == "cache_aware") {
    return make_cache_aware(cfg, std::move(now));
  }
  if (name == "consistent_hash" || name == "consistent_hashing") {
    return make_consistent_hash();
  }
  if (name == "least_load") {
    return make_least_load(cfg);
  }
  if (name == "prefix_hash") {
    return make_prefix_hash(cfg);
  }
  if (name == "manual") {
    return make_manual(cfg, std::move(now));
  }
  if (name == "bucket") {
    return make_bucket(cfg, std::move(now));
  }
  return nullptr;
}

} // namespace troupe::actors
