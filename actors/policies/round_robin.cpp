#include "actors/policies/strategy.hpp"

#include <atomic>

namespace troupe::actors {

namespace {

class round_robin final : public strategy {
public:
  std::string_view name() const noexcept override { return "round_robin"; }

  bool concurrent() const noexcept override { return true; }

  std::size_t pick(const std::vector<const worker_entry*>& candidates,
                   const selection& sel) override {
    // The next eligible one in turn: one step when all are, at most one lap when few are.
    for (std::size_t tries = 0; tries < candidates.size(); ++tries) {
      auto k = cursor_.fetch_add(1, std::memory_order_relaxed) % candidates.size();
      if (eligible(*candidates[k], sel)) {
        return k;
      }
    }
    return npos;
  }

  nlohmann::json describe() const override { return {{"cursor", cursor_.load()}}; }

private:
  std::atomic<std::uint64_t> cursor_{0};
};

} // namespace

std::unique_ptr<strategy> make_round_robin() {
  return std::make_unique<round_robin>();
}

} // namespace troupe::actors
