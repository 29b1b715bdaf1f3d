#include "apps/troupe-bench/load_driver.hpp"

#include <cmath>

namespace troupe::bench {

namespace {

std::vector<std::string> urls_of(const run_context& ctx) {
  std::vector<std::string> out;
  for (const auto& t : ctx.targets()) {
    out.push_back(t.url);
  }
  return out;
}

} // namespace

load_driver::load_driver(boost::asio::io_context& ioc, run_context& ctx, shard_plan plan)
    : ioc_(ioc), ctx_(ctx), plan_(plan), stats_(plan.window_start, urls_of(ctx)), timer_(ioc),
      rng_(plan.seed) {
  for (const auto& t : ctx_.targets()) {
    pools_.push_back(
        std::make_unique<connection_pool>(ioc_.get_executor(), t, ctx_.config().max_connections));
  }
}

std::size_t load_driver::peak_connections() const {
  std::size_t n = 0;
  for (const auto& p : pools_) {
    n += p->peak();
  }
  return n;
}

void load_driver::start() {
  next_due_ = plan_.start;
  if (plan_.share.open_loop) {
    if (plan_.share.rate > 0) {
      // The first arrival, like every other, one random gap after the previous (the start).
      next_due_ += std::chrono::duration_cast<bench_clock::duration>(
          std::chrono::duration<double>(next_gap_s()));
      arm();
    }
    return;
  }
  // Closed loop: every slot starts at the stage start.
  timer_.expires_at(plan_.start);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) {
      return;
    }
    for (std::size_t i = 0; i < plan_.share.concurrency; ++i) {
      release(bench_clock::now(), true);
    }
  });
}

bool load_driver::may_release(bench_clock::time_point due) {
  if (ended_) {
    return false;
  }
  if (due >= plan_.arrivals_end || ctx_.stopping() || !ctx_.claim()) {
    ended_ = true;
    return false;
  }
  return true;
}

double load_driver::next_gap_s() {
  const double mean = 1.0 / plan_.share.rate;
  if (ctx_.config().arrival == arrival_kind::uniform) {
    return mean;
  }
  // Exponential gaps: −ln(1 − U) / rate, U uniform in [0, 1).
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return -std::log1p(-u) * mean;
}

void load_driver::arm() {
  timer_.expires_at(next_due_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) {
      on_timer();
    }
  });
}

void load_driver::on_timer() {
  // Every arrival already due goes now, each with its own due time: a late wake-up (a busy
  // machine) delays requests, and that delay is measured, not hidden.
  const auto now = bench_clock::now();
  while (next_due_ <= now) {
    if (!may_release(next_due_)) {
      return;
    }
    release(next_due_, false);
    next_due_ += std::chrono::duration_cast<bench_clock::duration>(
        std::chrono::duration<double>(next_gap_s()));
  }
  if (next_due_ >= plan_.arrivals_end) {
    ended_ = true;
    return;
  }
  arm();
}

void load_driver::release(bench_clock::time_point due, bool slot) {
  if (slot && !may_release(due)) {
    return;
  }
  auto next = ctx_.next();
  request_record rec;
  rec.target = next.target;
  rec.scheduled = due;
  rec.measured = due >= plan_.window_start;
  ctx_.counters().sent.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = due + std::chrono::duration_cast<bench_clock::duration>(
                                  std::chrono::duration<double>(ctx_.config().timeout_s));
  auto& pool = *pools_[next.target];
  pool.acquire([this, &pool, bytes = std::move(next.bytes), rec = std::move(rec), deadline,
                slot](std::shared_ptr<connection> c) mutable {
    auto* conn = c.get();
    conn->start(std::move(bytes), ctx_.config().api, deadline, std::move(rec),
                [this, &pool, c = std::move(c), slot](request_record&& r, bool reusable) mutable {
                  pool.release(std::move(c), reusable);
                  on_done(std::move(r), slot);
                });
  });
}

void load_driver::on_done(request_record&& r, bool slot) {
  auto& counters = ctx_.counters();
  counters.done.fetch_add(1, std::memory_order_relaxed);
  if (r.result != outcome::ok) {
    counters.failed.fetch_add(1, std::memory_order_relaxed);
  } else {
    counters.output_tokens.fetch_add(r.output_tokens(), std::memory_order_relaxed);
  }
  stats_.add(r);
  if (slot) {
    release(bench_clock::now(), true);
  }
}

} // namespace troupe::bench
