#include "actors/policies/strategy.hpp"

namespace troupe::actors {

std::unique_ptr<strategy> make_strategy(std::string_view name, const policy_config& cfg) {
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
  return nullptr;
}

} // namespace troupe::actors
