#pragma once

#include "apps/troupe-bench/connection_pool.hpp"
#include "apps/troupe-bench/run_context.hpp"
#include "apps/troupe-bench/stage_stats.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <random>
#include <vector>

namespace troupe::bench {

/// One event loop's share of a stage.
struct shard_plan {
  stage_spec share;                     ///< This loop's rate or concurrency.
  bench_clock::time_point start;        ///< When the stage begins (the same for every loop).
  bench_clock::time_point window_start; ///< End of the warm-up.
  bench_clock::time_point arrivals_end; ///< No request is released at or after it.
  std::uint64_t seed = 1;               ///< Of this loop's arrival times.
};

/// Releases one loop's requests: at the arrival times of a Poisson (or uniform) process for
/// a rate, or whenever one of its slots frees for a concurrency. The stage ends for the loop
/// when no more requests may be released and the last one finished (`io_context::run`
/// returns then).
class load_driver {
public:
  load_driver(boost::asio::io_context& ioc, run_context& ctx, shard_plan plan);

  /// Schedules the first releases.
  void start();

  const stage_stats& stats() const noexcept { return stats_; }

  /// Connections opened at most at once, over every target.
  std::size_t peak_connections() const;

private:
  bool may_release(bench_clock::time_point due);
  double next_gap_s();
  void arm();
  void on_timer();
  void release(bench_clock::time_point due, bool slot);
  void on_done(request_record&& r, bool slot);

  boost::asio::io_context& ioc_;
  run_context& ctx_;
  shard_plan plan_;
  stage_stats stats_;
  std::vector<std::unique_ptr<connection_pool>> pools_;
  boost::asio::steady_timer timer_;
  std::mt19937_64 rng_;
  bench_clock::time_point next_due_;
  bool ended_ = false;
};

} // namespace troupe::bench
