#include "actors/policies/cache_score.hpp"

#include <algorithm>
#include <tuple>

namespace troupe::actors {

std::size_t best_by_score(const std::vector<cache_candidate>& cands, double mean_prompt_bytes,
                          double load_weight, int stale_margin) {
  const double per_request = load_weight * mean_prompt_bytes;
  std::size_t longest = 0;
  for (auto& c : cands) {
    longest = std::max(longest, c.matched);
  }
  auto key = [&](const cache_candidate& c) {
    auto load = c.load;
    if (longest > 0 && c.matched == longest && stale_margin > 0) {
      load -= std::clamp(c.remote, 0, stale_margin); // reported, perhaps ended since
    }
    const double score = static_cast<double>(c.matched) - per_request * load;
    // Larger is better in every component: negate what should be small.
    return std::tuple{score, -load, -static_cast<double>(c.tree_bytes)};
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
