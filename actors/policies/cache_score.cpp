#include "actors/policies/cache_score.hpp"

#include <tuple>

namespace troupe::actors {

std::size_t best_by_score(const std::vector<cache_candidate>& cands, double mean_prompt_bytes,
                          double load_weight) {
  const double per_request = load_weight * mean_prompt_bytes;
  auto key = [&](const cache_candidate& c) {
    const double score = static_cast<double>(c.matched) - per_request * c.load;
    // Larger is better in every component: negate what should be small.
    return std::tuple{score, -c.load, -static_cast<double>(c.tree_bytes)};
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < cands.size(); ++i) {
    if (key(cands[i]) > key(cands[best])) {
      best = i;
    }
  }
  return best;
}

} // namespace troupe::actors
