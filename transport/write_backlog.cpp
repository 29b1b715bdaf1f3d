#include "transport/write_backlog.hpp"

#include <cstdint>
#include <utility>

namespace troupe::transport {

void write_backlog::set(std::size_t n) noexcept {
  bytes_ = n;
  if (!stats_) {
    return;
  }
  auto reported = n - n % queued_report_step;
  if (reported != reported_) {
    stats_->queued_bytes.fetch_add(static_cast<std::int64_t>(reported) -
                                       static_cast<std::int64_t>(reported_),
                                   std::memory_order_relaxed);
    reported_ = reported;
  }
}

void write_backlog::pause(flow_source* source) noexcept {
  if (!source) {
    return;
  }
  if (!paused_) {
    paused_ = true;
    if (stats_) {
      stats_->pauses.fetch_add(1, std::memory_order_relaxed);
      stats_->paused.fetch_add(1, std::memory_order_relaxed);
    }
  }
  source->pause();
}

void write_backlog::resume(flow_source* source) noexcept {
  forget_pause();
  if (source) {
    source->resume();
  }
}

void write_backlog::forget_pause() noexcept {
  if (!std::exchange(paused_, false)) {
    return;
  }
  if (stats_) {
    stats_->paused.fetch_sub(1, std::memory_order_relaxed);
  }
}

} // namespace troupe::transport
