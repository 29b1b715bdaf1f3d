#pragma once

#include "apps/troupe-bench/stage_stats.hpp"

#include <optional>
#include <string>
#include <vector>

namespace troupe::bench {

/// The gnuplot script that draws latency (TTFT and end-to-end, p50 and p99) against the
/// throughput each stage reached, one point per stage, into `png_path`; data inline.
std::string plot_script(const std::vector<stage_summary>& stages, const std::string& png_path,
                        const std::string& title);

/// Runs gnuplot on the script; the reason when it could not draw.
std::optional<std::string> draw_plot(const std::string& script);

} // namespace troupe::bench
