#include "apps/troupe-bench/stage_runner.hpp"

#include "apps/troupe-bench/load_driver.hpp"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <ctime>
#include <thread>

namespace troupe::bench {

namespace {

// The share of `spec` that loop `i` of `n` drives: rates split evenly (a sum of independent
// Poisson processes is one at the summed rate); concurrency split as evenly as it goes.
stage_spec share_of(const stage_spec& spec, std::size_t i, std::size_t n) {
  stage_spec s = spec;
  if (spec.open_loop) {
    s.rate = spec.rate / static_cast<double>(n);
  } else {
    s.concurrency = spec.concurrency / n + (i < spec.concurrency % n ? 1 : 0);
  }
  return s;
}

bench_clock::duration seconds(double s) {
  return std::chrono::duration_cast<bench_clock::duration>(std::chrono::duration<double>(s));
}

} // namespace

stage_outcome run_stage(run_context& ctx, const stage_spec& spec, progress_line& progress,
                        const sigset_t& signals, std::uint64_t seed) {
  const auto& cfg = ctx.config();
  ctx.begin_stage();
  // Every loop starts at the same instant, a moment after the set-up.
  const auto start = bench_clock::now() + std::chrono::milliseconds(20);
  shard_plan plan;
  plan.start = start;
  plan.window_start = start + seconds(cfg.warmup_s);
  plan.arrivals_end =
      cfg.duration_s > 0 ? start + seconds(cfg.duration_s) : bench_clock::time_point::max();
  const std::size_t n = std::min<std::size_t>(
      cfg.threads, spec.open_loop ? cfg.threads : std::max<std::size_t>(spec.concurrency, 1));

  std::vector<std::unique_ptr<boost::asio::io_context>> loops;
  std::vector<std::unique_ptr<load_driver>> drivers;
  for (std::size_t i = 0; i < n; ++i) {
    loops.push_back(std::make_unique<boost::asio::io_context>(1));
    auto p = plan;
    p.share = share_of(spec, i, n);
    p.seed = seed * 1000003 + i;
    drivers.push_back(std::make_unique<load_driver>(*loops.back(), ctx, p));
    drivers.back()->start();
  }
  std::atomic<std::size_t> finished{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      loops[i]->run();
      finished.fetch_add(1);
    });
  }

  progress.begin(spec.label(), cfg.duration_s, cfg.requests);
  stage_outcome result;
  auto elapsed = [&] { return std::chrono::duration<double>(bench_clock::now() - start).count(); };
  double next_tick = progress.interval_s();
  int stops = 0;
  while (finished.load() < n) {
    timespec wait{0, 50'000'000};
    if (::sigtimedwait(&signals, nullptr, &wait) > 0) {
      result.interrupted = true;
      if (++stops == 1) {
        ctx.request_stop();
      } else {
        for (auto& l : loops) {
          l->stop();
        }
      }
    }
    if (elapsed() >= next_tick) {
      progress.tick(ctx.counters(), elapsed());
      next_tick += progress.interval_s();
    }
  }
  for (auto& t : threads) {
    t.join();
  }
  progress.end(ctx.counters(), elapsed());

  stage_stats total{plan.window_start, {}};
  bool first = true;
  for (auto& d : drivers) {
    if (first) {
      total = d->stats();
      first = false;
    } else {
      total.merge(d->stats());
    }
    result.peak_connections += d->peak_connections();
  }
  // Connections close before their loops go (the drivers hold them).
  drivers.clear();
  result.summary = total.summarize(spec);
  return result;
}

} // namespace troupe::bench
