#include "actors/policies/candidate_ring.hpp"
#include "actors/policies/strategy.hpp"

namespace troupe::actors {

namespace {

/// Session affinity on a hash ring (docs/policies.md): a request with a routing key goes to
/// the worker owning the key on a ring of all the policy's workers, walking on past those that
/// cannot take it now (unhealthy, excluded, another model), so it comes back when they
/// recover; a request without a key is placed by power of two.
class consistent_hash final : public strategy {
public:
  std::string_view name() const noexcept override { return "consistent_hash"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    if (!sel.routing_key.empty()) {
      if (auto k = ring_.find(sel.routing_key, cands, sel); k != candidate_ring::npos) {
        ++keyed_;
        return k;
      }
    }
    ++unkeyed_;
    return fallback_->pick(cands, sel);
  }

  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                protocol::worker_type role) override {
    ring_.on_fleet(fleet, change, role);
  }

  nlohmann::json describe() const override {
    return {{"ring_workers", ring_.members()},
            {"ring_points", ring_.points()},
            {"ring_rebuilds", ring_.rebuilds()},
            {"virtual_nodes", candidate_ring::virtual_nodes},
            {"without_key", "power_of_two"},
            {"picks", {{"routing_key", keyed_}, {"without_key", unkeyed_}}}};
  }

private:
  candidate_ring ring_;
  std::unique_ptr<strategy> fallback_ = make_power_of_two();
  std::uint64_t keyed_ = 0;
  std::uint64_t unkeyed_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_consistent_hash() {
  return std::make_unique<consistent_hash>();
}

} // namespace troupe::actors
