#include "actors/policies/candidate_ring.hpp"
#include "actors/policies/prompt_text.hpp"
#include "actors/policies/strategy.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace troupe::actors {

namespace {

/// smg's `prefix_hash` (docs/policies.md): the head of the prompt (its first
/// `--prefix-token-count` tokens, or the deepest `--cache-boundaries` position it reaches, then
/// the shallower ones), or the routing key when the request has one, is looked up on a hash
/// ring of the workers; the owner takes the request unless it is overloaded, i.e. above
/// max(`load_factor` x the mean load, the mean + `balance_abs_threshold`). When every level's
/// owner is overloaded, the least loaded worker that is not; when all are, the first owner.
/// Cheaper than cache_aware (no tree), and stable across gateway nodes: every node maps a
/// prefix to the same worker.
class prefix_hash final : public strategy {
public:
  explicit prefix_hash(const policy_config& cfg) : cfg_(cfg) {
    std::sort(cfg_.cache_boundaries.begin(), cfg_.cache_boundaries.end());
  }

  std::string_view name() const noexcept override { return "prefix_hash"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    levels_.clear();
    if (!sel.routing_key.empty()) {
      levels_.push_back(sel.routing_key);
    } else {
      auto text = prompt_text(sel.prompt, joined_);
      // Deepest boundary the prompt reaches first.
      for (auto it = cfg_.cache_boundaries.rbegin(); it != cfg_.cache_boundaries.rend(); ++it) {
        if (auto bytes = *it * bytes_per_token; bytes > 0 && text.size() >= bytes) {
          levels_.push_back(text.substr(0, bytes));
        }
      }
      if (levels_.empty() && !text.empty()) {
        levels_.push_back(text.substr(0, cfg_.prefix_token_count * bytes_per_token));
      }
    }
    // The loads looked at: every eligible candidate of a small group, a sample of a large one
    // (its mean stands for the group's; a pick costs the same with 4 workers or 4,000), left
    // as drawn: the walk's first least loaded is then a random one of the least loaded drawn.
    eligible_sample(cands, sel, rng_, sample_, sample_size, sample_order::drawn);
    if (sample_.empty()) {
      return npos;
    }
    if (levels_.empty()) {
      ++no_key_;
      return least_loaded(cands, false);
    }
    long total = 0;
    for (auto i : sample_) {
      total += std::max(0, cands[i]->live->load());
    }
    threshold_ = overload_threshold(total, sample_.size());
    std::size_t first_owner = candidate_ring::npos;
    for (auto level : levels_) {
      auto k = ring_.find(level, cands, sel);
      if (k == candidate_ring::npos) {
        continue;
      }
      if (cands[k]->live->load() <= threshold_) {
        ++ring_hits_;
        return k;
      }
      if (first_owner == candidate_ring::npos) {
        first_owner = k;
      }
    }
    if (first_owner == candidate_ring::npos) {
      ++no_key_;
      return least_loaded(cands, false);
    }
    ++walks_;
    auto k = least_loaded(cands, true);
    return k != npos ? k : first_owner;
  }

  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                protocol::worker_type role) override {
    ring_.on_fleet(fleet, change, role);
  }

  nlohmann::json describe() const override {
    return {{"prefix_token_count", cfg_.prefix_token_count},
            {"prefix_bytes", cfg_.prefix_token_count * bytes_per_token},
            {"load_factor", cfg_.prefix_hash_load_factor},
            {"balance_abs_threshold", cfg_.prefix_hash_balance_abs_threshold},
            {"cache_boundaries", cfg_.cache_boundaries},
            {"ring_workers", ring_.members()},
            {"picks", {{"ring_hit", ring_hits_}, {"load_walk", walks_}, {"no_key", no_key_}}}};
  }

private:
  /// smg's test: the load above which a worker is overloaded, given the candidates' total.
  double overload_threshold(long total, std::size_t n) const {
    if (total == 0 || n == 0) {
      return static_cast<double>(std::numeric_limits<int>::max());
    }
    const double mean = static_cast<double>(total + 1) / static_cast<double>(n);
    return std::max(mean * cfg_.prefix_hash_load_factor,
                    mean + static_cast<double>(cfg_.prefix_hash_balance_abs_threshold));
  }

  /// The least loaded candidate of the sample (the first of equals: in list order for a small
  /// group, a random one of a large group's draws), of those not overloaded when `bounded`;
  /// npos when there is none.
  std::size_t least_loaded(const std::vector<const worker_entry*>& cands, bool bounded) const {
    std::size_t best = npos;
    for (auto i : sample_) {
      auto load = cands[i]->live->load();
      if (bounded && load > threshold_) {
        continue;
      }
      if (best == npos || load < cands[best]->live->load()) {
        best = i;
      }
    }
    return best;
  }

  policy_config cfg_;
  candidate_ring ring_;
  std::vector<std::string_view> levels_; ///< Scratch: the keys to look up, deepest first.
  std::string joined_;                   ///< Scratch: a two-part prompt, joined.
  std::vector<std::size_t> sample_;      ///< Scratch: the candidates whose loads are looked at.
  pick_rng rng_ = pick_rng::seeded();
  double threshold_ = 0;
  std::uint64_t ring_hits_ = 0;
  std::uint64_t walks_ = 0;
  std::uint64_t no_key_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_prefix_hash(const policy_config& cfg) {
  return std::make_unique<prefix_hash>(cfg);
}

} // namespace troupe::actors
