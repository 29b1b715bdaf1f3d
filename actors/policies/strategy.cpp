#include "actors/policies/strategy.hpp"

namespace troupe::actors {

std::unique_ptr<strategy> make_strategy(std::string_view name) {
  if (name == "round_robin") {
    return make_round_robin();
  }
  if (name == "random") {
    return make_random();
  }
  if (name == "power_of_two") {
    return make_power_of_two();
  }
  return nullptr;
}

} // namespace troupe::actors
