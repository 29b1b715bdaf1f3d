#pragma once

#include "apps/troupe-bench/stage_stats.hpp"

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace troupe::bench {

/// What a run was: for the report's header.
struct run_info {
  std::string api;
  bool stream = true;
  std::string model;
  std::vector<std::string> urls;
  std::string workload;
  std::string arrival;
  long max_tokens = 0;
  std::size_t threads = 1;
};

/// One stage as a block of text: counts, throughput, cache hits, then a latency table.
void print_stage(std::ostream& out, const stage_summary& s);

/// Several stages as one table, a row each (the latency-vs-load curve in numbers).
void print_overview(std::ostream& out, const std::vector<stage_summary>& stages);

/// The run's header line.
void print_header(std::ostream& out, const run_info& info);

/// A latency summary as JSON (`count`, `mean`, `min`, `p50`, `p90`, `p99`, `max`; ms).
nlohmann::json to_json(const summary& s);

/// One stage as JSON.
nlohmann::json to_json(const stage_summary& s);

/// The whole report: `{"run": {...}, "stages": [...]}`.
nlohmann::json to_json(const run_info& info, const std::vector<stage_summary>& stages);

} // namespace troupe::bench
