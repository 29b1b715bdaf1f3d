#include "actors/policies/hash_ring.hpp"
#include "actors/policies/strategy.hpp"

#include <string>
#include <unordered_map>

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
    if (!sel.routing_key.empty() && ring_.members() > 0) {
      eligible_.assign(ring_.members(), 0);
      candidate_.resize(ring_.members());
      for (std::size_t i = 0; i < cands.size(); ++i) {
        auto m = member(*cands[i]);
        if (m != hash_ring::npos) {
          eligible_[m] = 1;
          candidate_[m] = i;
        }
      }
      auto m = ring_.find(sel.routing_key, eligible_);
      if (m != hash_ring::npos) {
        ++keyed_;
        return candidate_[m];
      }
    }
    ++unkeyed_;
    return fallback_->pick(cands, sel);
  }

  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) override {
    std::vector<std::string> urls;
    for (auto& w : fleet.workers) {
      if (w->spec.type == role) {
        urls.push_back(w->spec.url);
      }
    }
    if (urls != urls_) { // else a change elsewhere in the fleet: the ring stays as it is
      urls_ = std::move(urls);
      ring_.assign(urls_);
      member_of_.clear();
      for (std::size_t m = 0; m < urls_.size(); ++m) {
        member_of_.emplace(urls_[m], m);
      }
    }
    // Candidates are entries of this snapshot: picks find their members by address.
    by_entry_.clear();
    for (auto& w : fleet.workers) {
      if (auto it = member_of_.find(w->spec.url); w->spec.type == role && it != member_of_.end()) {
        by_entry_.emplace(w.get(), it->second);
      }
    }
  }

  nlohmann::json describe() const override {
    return {{"ring_workers", ring_.members()},
            {"ring_points", ring_.size()},
            {"virtual_nodes", virtual_nodes},
            {"without_key", "power_of_two"},
            {"picks", {{"routing_key", keyed_}, {"without_key", unkeyed_}}}};
  }

private:
  /// The ring member of candidate `w`, or npos.
  std::size_t member(const worker_entry& w) const {
    if (auto it = by_entry_.find(&w); it != by_entry_.end()) {
      return it->second;
    }
    auto it = member_of_.find(w.spec.url);
    return it != member_of_.end() ? it->second : hash_ring::npos;
  }

  /// Points per worker (ketama's count): a worker's share of the keys stays within ~10-15% of
  /// 1/N (hash_ring_test), and a ring of 64 workers is 10k points.
  static constexpr std::size_t virtual_nodes = 160;

  hash_ring ring_{virtual_nodes};
  std::vector<std::string> urls_;                                 ///< Ring members, by URL.
  std::unordered_map<std::string, std::size_t> member_of_;        ///< URL -> member.
  std::unordered_map<const worker_entry*, std::size_t> by_entry_; ///< Snapshot entry -> member.
  std::vector<char> eligible_;                                    ///< Scratch, by member.
  std::vector<std::size_t> candidate_;                            ///< Scratch: member -> candidate.
  std::unique_ptr<strategy> fallback_ = make_power_of_two();
  std::uint64_t keyed_ = 0;
  std::uint64_t unkeyed_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_consistent_hash() {
  return std::make_unique<consistent_hash>();
}

} // namespace troupe::actors
