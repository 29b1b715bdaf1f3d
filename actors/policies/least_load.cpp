#include "actors/policies/strategy.hpp"

#include <random>

namespace troupe::actors {

namespace {

/// smg's `least_load` as it routes a fleet that reports no engine loads: join the shortest
/// queue. Troupe's load is exact and live (this node's requests in flight plus what the other
/// cluster members last reported), so no poll, and no since-poll correction, is needed. Ties
/// go uniformly at random (smg's reservoir draw), so an idle fleet is not herded onto its first
/// worker. With `--least-load-max-waiting-requests` N, workers with N requests in flight are
/// skipped; when every candidate is there, the request gets 503 rather than a deeper queue.
class least_load final : public strategy {
public:
  explicit least_load(const policy_config& cfg) : cfg_(cfg) {}

  std::string_view name() const noexcept override { return "least_load"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection&) override {
    const auto cap = cfg_.least_load_max_waiting_requests;
    std::size_t best = cands.size();
    int best_load = 0;
    std::uint64_t tied = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const int load = cands[i]->live->load();
      if (cap > 0 && load >= static_cast<int>(cap)) {
        continue;
      }
      if (best == cands.size() || load < best_load) {
        best = i;
        best_load = load;
        tied = 1;
      } else if (load == best_load &&
                 std::uniform_int_distribution<std::uint64_t>{0, tied++}(rng_) == 0) {
        best = i; // each of k tied candidates is kept with probability 1/k
      }
    }
    if (best == cands.size()) {
      ++capped_;
    }
    return best;
  }

  std::string refusal() const override {
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
  policy_config cfg_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::uint64_t capped_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_least_load(const policy_config& cfg) {
  return std::make_unique<least_load>(cfg);
}

} // namespace troupe::actors
