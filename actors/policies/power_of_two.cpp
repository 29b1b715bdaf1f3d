#include "actors/policies/strategy.hpp"

namespace troupe::actors {

namespace {

/// Two random candidates, the one with fewer requests in flight wins (ties: the first).
class power_of_two final : public strategy {
public:
  std::string_view name() const noexcept override { return "power_of_two"; }

  bool concurrent() const noexcept override { return true; }

  std::size_t pick(const std::vector<const worker_entry*>& candidates,
                   const selection& sel) override {
    // Two eligible candidates drawn at random (never a scan of the list): the less loaded wins.
    auto& rng = thread_rng();
    auto a = random_eligible(candidates, sel, rng);
    if (a == npos) {
      return npos;
    }
    auto b = random_eligible(candidates, sel, rng, a);
    if (b == npos) {
      return a;
    }
    return candidates[b]->live->load() < candidates[a]->live->load() ? b : a;
  }

  nlohmann::json describe() const override { return nlohmann::json::object(); }
};

} // namespace

std::unique_ptr<strategy> make_power_of_two() {
  return std::make_unique<power_of_two>();
}

} // namespace troupe::actors
