#include "actors/pooled_channel.hpp"

#include <caf/send.hpp>

namespace troupe::actors {

using transport::exchange_result;
using transport::exchange_status;

bool is_worker_failure(const exchange_result& r) noexcept {
  switch (r.status) {
  case exchange_status::connect_failed:
  case exchange_status::broken:
  case exchange_status::timeout:
    return true;
  case exchange_status::ok:
    return r.http_status >= 500;
  case exchange_status::rejected:
    // Refused by a size limit: the worker's fault only when it was answering an error.
    return r.http_status >= 500;
  case exchange_status::cancelled:
  case exchange_status::no_resources: // the gateway's own shortage, not the worker's
    return false;
  }
  return false;
}

pooled_channel::pooled_channel(std::shared_ptr<transport::upstream_pool> pool,
                               std::string path_prefix, std::shared_ptr<worker_live> live)
    : pool_(std::move(pool)), path_prefix_(std::move(path_prefix)), live_(std::move(live)) {}

std::shared_ptr<transport::exchange_control> pooled_channel::start(dispatch_order order,
                                                                   caf::actor reply_to) {
  live_->in_flight.fetch_add(1, std::memory_order_relaxed);
  live_->requests.fetch_add(1, std::memory_order_relaxed);
  if (!path_prefix_.empty()) {
    order.call.target = path_prefix_ + order.call.target;
  }
  return transport::upstream_exchange::start(
      pool_, std::move(order.call), std::move(order.sink),
      [self = shared_from_this(), to = std::move(reply_to), id = order.id](exchange_result r) {
        self->settle(r);
        caf::anon_send(to, done_atom_v, id, std::move(r));
      });
}

void pooled_channel::bind(const worker_proxy_actor& proxy) {
  proxy_ = caf::actor_cast<caf::weak_actor_ptr>(proxy);
}

void pooled_channel::close() noexcept {
  // Sequentially consistent, as the count's decrement in `settle`: of the two, either the
  // proxy sees no exchange in flight, or the last exchange sees the proxy closing (or both).
  closing_.store(true);
}

void pooled_channel::settle(const exchange_result& r) {
  bool failed = is_worker_failure(r);
  bool tell = false;
  unsigned streak = 0;
  if (failed) {
    live_->failures.fetch_add(1, std::memory_order_relaxed);
    streak = failure_streak_.fetch_add(1, std::memory_order_relaxed) + 1;
    tell = true;
  } else if (r.status != exchange_status::cancelled && r.status != exchange_status::rejected &&
             r.status != exchange_status::no_resources) {
    if (failure_streak_.load(std::memory_order_relaxed) != 0) {
      failure_streak_.store(0, std::memory_order_relaxed);
    }
    tell = live_->breaker.load(std::memory_order_relaxed) == breaker_state::half_open;
  }
  bool idle = live_->in_flight.fetch_sub(1) == 1 && closing_.load();
  if (!tell && !idle) {
    return;
  }
  auto proxy = caf::actor_cast<worker_proxy_actor>(caf::actor_cast<caf::strong_actor_ptr>(proxy_));
  if (!proxy) {
    return;
  }
  if (tell) {
    caf::anon_send(proxy, outcome_atom_v, r, streak);
  }
  if (idle) {
    caf::anon_send(proxy, idle_atom_v);
  }
}

} // namespace troupe::actors
