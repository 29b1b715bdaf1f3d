#include "actors/policies/strategy.hpp"

namespace troupe::actors {

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
    return make_cache_aware(cfg);
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
