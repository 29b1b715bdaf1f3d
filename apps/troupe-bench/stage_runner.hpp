#pragma once

#include "apps/troupe-bench/progress.hpp"
#include "apps/troupe-bench/run_context.hpp"
#include "apps/troupe-bench/stage_stats.hpp"

#include <csignal>

namespace troupe::bench {

/// What running one stage produced.
struct stage_outcome {
  stage_summary summary;
  bool interrupted = false; ///< SIGINT/SIGTERM came during the stage.
  std::size_t peak_connections = 0;
};

/// Runs one stage on `--threads` event loops, each driving its share of the rate or the
/// concurrency, while this thread shows progress and waits for `signals` (blocked in every
/// thread by the caller): the first stops releasing requests (those in flight finish), a
/// second abandons them.
stage_outcome run_stage(run_context& ctx, const stage_spec& spec, progress_line& progress,
                        const sigset_t& signals, std::uint64_t seed);

} // namespace troupe::bench
