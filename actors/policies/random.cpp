#include "actors/policies/strategy.hpp"

#include <random>

namespace troupe::actors {

namespace {

class random_pick final : public strategy {
public:
  std::string_view name() const noexcept override { return "random"; }

  std::size_t pick(const std::vector<const worker_entry*>& candidates,
                   const selection& sel) override {
    return random_eligible(candidates, sel, rng_);
  }

  nlohmann::json describe() const override { return nlohmann::json::object(); }

private:
  std::mt19937_64 rng_{std::random_device{}()};
};

} // namespace

std::unique_ptr<strategy> make_random() {
  return std::make_unique<random_pick>();
}

} // namespace troupe::actors
