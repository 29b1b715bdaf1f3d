#include "actors/policies/strategy.hpp"

#include <vector>

namespace troupe::actors {

namespace {

/// smg's `least_load` as it routes a fleet that reports no engine loads: join the shortest
/// queue. Troupe's load is exact and live (this node's requests in flight plus what the other
/// cluster members last reported), so no poll, and no since-poll correction, is needed. Ties
/// go uniformly at random (smg's reservoir draw), so an idle fleet is not herded onto its first
/// worker. With `--least-load-max-waiting-requests` N, workers with N requests in flight are
/// skipped; when every candidate is there, the request gets 503 rather than a deeper queue.
/// A group of more than `sample_size` workers is looked at through a random sample of that
/// many (the least loaded of 32 random workers, not of all 4,000: a pick stays O(1)); the
/// first least loaded of the draws is already uniform among the least loaded drawn.
class least_load final : public strategy {
public:
  explicit least_load(const policy_config& cfg) : cfg_(cfg) {}

  std::string_view name() const noexcept override { return "least_load"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    capped_now_ = false;
    // Among every eligible candidate of a small group; a sample of a large one (a pick costs
    // the same with 4 workers or 4,000), all of it only when the whole sample is at the cap.
    const bool sampled =
        eligible_sample(cands, sel, rng_, sample_, sample_size, sample_order::drawn);
    if (sample_.empty()) {
      return npos;
    }
    auto k = least(cands, sample_, !sampled);
    if (k == npos && sampled) {
      all_.clear();
      for (std::size_t i = 0; i < cands.size(); ++i) {
        if (eligible(*cands[i], sel)) {
          all_.push_back(i);
        }
      }
      k = least(cands, all_, true);
    }
    if (k == npos) {
      ++capped_;
      capped_now_ = true;
    }
    return k;
  }

  std::string refusal() const override {
    if (!capped_now_) {
      return {};
    }
    return "every worker has " + std::to_string(cfg_.least_load_max_waiting_requests) +
           " requests in flight (--least-load-max-waiting-requests)";
  }

  nlohmann::json describe() const override {
    return {{"max_waiting_requests", cfg_.least_load_max_waiting_requests},
            {"kv_pressure_weight", cfg_.least_load_kv_pressure_weight},
            {"default_throughput", cfg_.least_load_default_throughput},
            {"mean_prefill_tokens", cfg_.least_load_mean_prefill_tokens},
            {"score", "requests in flight"},
            {"refused_at_cap", capped_}};
  }

private:
  /// The least loaded of `among` (indices into `cands`) under the cap, uniformly at random
  /// among ties: by a draw per tie when `among` is a list (`break_ties`), as drawn when it is
  /// random draws (the first of them); npos when all are at the cap.
  std::size_t least(const std::vector<const worker_entry*>& cands,
                    const std::vector<std::size_t>& among, bool break_ties) {
    const auto cap = cfg_.least_load_max_waiting_requests;
    std::size_t best = npos;
    int best_load = 0;
    std::uint64_t tied = 0;
    for (auto i : among) {
      const int load = cands[i]->live->load();
      if (cap > 0 && load >= static_cast<int>(cap)) {
        continue;
      }
      if (best == npos || load < best_load) {
        best = i;
        best_load = load;
        tied = 1;
      } else if (break_ties && load == best_load && draw_index(rng_, ++tied) == 0) {
        best = i; // each of k tied candidates is kept with probability 1/k
      }
    }
    return best;
  }

  policy_config cfg_;
  std::vector<std::size_t> sample_; ///< Scratch: the candidates looked at.
  std::vector<std::size_t> all_;    ///< Scratch: every eligible candidate.
  bool capped_now_ = false;         ///< The last pick refused: all at the cap.
  pick_rng rng_ = pick_rng::seeded();
  std::uint64_t capped_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_least_load(const policy_config& cfg) {
  return std::make_unique<least_load>(cfg);
}

} // namespace troupe::actors
