#pragma once

#include "apps/troupe-bench/bench_config.hpp"
#include "apps/troupe-bench/request_record.hpp"
#include "apps/troupe-bench/stats.hpp"

#include <map>
#include <string>
#include <vector>

namespace troupe::bench {

/// Per-URL counts of one stage.
struct target_counts {
  std::string url;
  std::size_t requests = 0; ///< Measured requests sent there.
  std::size_t ok = 0;
  long prompt_tokens = 0; ///< Reported by the successful ones.
  long cached_tokens = 0;
  summary ttft; ///< Of the streams answered there, ms.
  summary e2e;  ///< Of the successful requests there, ms.
};

/// The figures of one stage, ready to print.
struct stage_summary {
  stage_spec spec;
  double duration_s = 0;    ///< From the end of the warm-up to the last measured response.
  std::size_t requests = 0; ///< Measured requests (started after the warm-up).
  std::size_t ok = 0;
  std::size_t failed = 0;
  std::size_t warmup = 0;                      ///< Requests of the warm-up, not counted elsewhere.
  std::map<std::string, std::size_t> failures; ///< By reason (`http_503`, `timeout`, ...).
  std::vector<std::string> first_errors;       ///< A few failures' details.
  double request_rate = 0;                     ///< Successful requests/s.
  double output_rate = 0;                      ///< Output tokens/s of successful requests.
  double input_rate = 0;                       ///< Prompt tokens/s (where reported).
  long output_tokens = 0;
  long prompt_tokens = 0;
  long cached_tokens = 0;
  double cache_hit_rate = -1; ///< cached / prompt tokens; −1 when no count was reported.
  summary ttft;               ///< Time to first token (streams), ms.
  summary itl;                ///< Every gap between two token events, ms.
  summary tpot;               ///< Per request: (end − first token) / (output tokens − 1), ms.
  summary e2e;                ///< End-to-end latency, ms.
  summary wait; ///< Due to sent: waiting for a connection (and the client's own lag), ms.
  std::vector<target_counts> targets;
};

/// Collects the records of one stage (of one event loop; merge the loops' at the end).
class stage_stats {
public:
  /// `window_start`: the end of the warm-up; `urls`: the targets, by index.
  stage_stats(bench_clock::time_point window_start, const std::vector<std::string>& urls);

  /// Counts one finished request.
  void add(const request_record& r);

  /// Adds the counts of another loop's share of the same stage.
  void merge(const stage_stats& other);

  /// The stage's figures.
  stage_summary summarize(const stage_spec& spec) const;

private:
  bench_clock::time_point window_start_;
  bench_clock::time_point last_end_;
  bool any_end_ = false;
  std::size_t requests_ = 0;
  std::size_t ok_ = 0;
  std::size_t warmup_ = 0;
  std::map<std::string, std::size_t> failures_;
  std::vector<std::string> first_errors_;
  long output_tokens_ = 0;
  long prompt_tokens_ = 0;
  long cached_tokens_ = 0;
  bool reported_prompt_ = false;
  bool reported_cached_ = false;
  sample_set ttft_, itl_, tpot_, e2e_, wait_;
  /// One URL's counts and its successful requests' TTFT and end-to-end samples, so that several
  /// URLs measured in one stage (e.g. a worker directly and through a gateway, at once) compare
  /// under the same load.
  struct target_stats {
    target_counts counts;
    sample_set ttft, e2e;
  };
  std::vector<target_stats> targets_; ///< By target index.
};

} // namespace troupe::bench
