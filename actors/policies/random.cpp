#include "actors/policies/strategy.hpp"

namespace troupe::actors {

namespace {

class random_pick final : public strategy {
public:
  std::string_view name() const noexcept override { return "random"; }

  bool concurrent() const noexcept override { return true; }

  std::size_t pick(const std::vector<const worker_entry*>& candidates,
                   const selection& sel) override {
    return random_eligible(candidates, sel, thread_rng());
  }

  nlohmann::json describe() const override { return nlohmann::json::object(); }
};

} // namespace

std::unique_ptr<strategy> make_random() {
  return std::make_unique<random_pick>();
}

} // namespace troupe::actors
