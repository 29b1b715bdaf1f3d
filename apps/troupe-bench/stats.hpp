#pragma once

#include <cstddef>
#include <vector>

namespace troupe::bench {

/// The figures reported for one latency: count, mean, extremes and percentiles (milliseconds).
struct summary {
  std::size_t count = 0;
  double mean = 0;
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

/// Every sample of one measure, kept exactly: percentiles are computed, not estimated.
class sample_set {
public:
  /// Adds one sample.
  void add(double v);

  /// Adds every sample of `other`.
  void merge(const sample_set& other);

  std::size_t count() const noexcept { return values_.size(); }
  bool empty() const noexcept { return values_.empty(); }

  /// Arithmetic mean; 0 when empty.
  double mean() const noexcept;

  /// The `p`-th percentile (0..100) by linear interpolation between the closest ranks (rank
  /// p/100 × (n − 1) of the sorted samples, as numpy's default); 0 when empty.
  double percentile(double p) const;

  /// count, mean, min, p50, p90, p99, max.
  summary summarize() const;

private:
  void sort() const;

  mutable std::vector<double> values_;
  mutable bool sorted_ = true;
  double sum_ = 0;
};

} // namespace troupe::bench
