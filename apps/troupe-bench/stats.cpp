#include "apps/troupe-bench/stats.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::bench {

void sample_set::add(double v) {
  if (sorted_ && !values_.empty() && v < values_.back()) {
    sorted_ = false;
  }
  values_.push_back(v);
  sum_ += v;
}

void sample_set::merge(const sample_set& other) {
  values_.insert(values_.end(), other.values_.begin(), other.values_.end());
  sum_ += other.sum_;
  sorted_ = false;
}

double sample_set::mean() const noexcept {
  return values_.empty() ? 0.0 : sum_ / static_cast<double>(values_.size());
}

void sample_set::sort() const {
  if (!sorted_) {
    std::sort(values_.begin(), values_.end());
    sorted_ = true;
  }
}

double sample_set::percentile(double p) const {
  if (values_.empty()) {
    return 0.0;
  }
  sort();
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values_.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, values_.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values_[lo] + (values_[hi] - values_[lo]) * frac;
}

summary sample_set::summarize() const {
  summary s;
  s.count = values_.size();
  if (values_.empty()) {
    return s;
  }
  sort();
  s.mean = mean();
  s.min = values_.front();
  s.max = values_.back();
  s.p50 = percentile(50);
  s.p90 = percentile(90);
  s.p99 = percentile(99);
  return s;
}

} // namespace troupe::bench
