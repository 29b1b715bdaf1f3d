#include "actors/policies/strategy.hpp"

#include <random>

namespace troupe::actors {

namespace {

/// Two random candidates, the one with fewer requests in flight wins (ties: the first).
class power_of_two final : public strategy {
public:
  std::string_view name() const noexcept override { return "power_of_two"; }

  std::size_t pick(const std::vector<const worker_entry*>& candidates, const selection&) override {
    auto n = candidates.size();
    if (n == 1) {
      return 0;
    }
    std::uniform_int_distribution<std::size_t> dist{0, n - 1};
    auto a = dist(rng_);
    auto b = dist(rng_);
    while (b == a) {
      b = dist(rng_);
    }
    return candidates[b]->live->load() < candidates[a]->live->load() ? b : a;
  }

  nlohmann::json describe() const override { return nlohmann::json::object(); }

private:
  std::mt19937_64 rng_{std::random_device{}()};
};

} // namespace

std::unique_ptr<strategy> make_power_of_two() {
  return std::make_unique<power_of_two>();
}

} // namespace troupe::actors
