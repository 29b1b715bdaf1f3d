#pragma once

#include "actors/messages.hpp"

#include <caf/actor.hpp>
#include <memory>

namespace troupe::actors {

/// A request's line to one worker: it starts an exchange on the worker's connections at once,
/// from the asking actor's own thread, without a message to the worker's proxy. The outcome
/// goes to `reply_to` as `(done_atom, order id, exchange_result)`, exactly once, when the
/// response is over however it ended. Thread-safe: any actor may start exchanges on it.
///
/// The proxy stays the worker's owner: the channel counts the worker's requests in flight and
/// tells the proxy what its circuit breaker and its drain need to know (docs/architecture.md).
class worker_channel {
public:
  virtual ~worker_channel() = default;

  /// Starts `order`; the returned control aborts it (its outcome is then `cancelled`).
  virtual std::shared_ptr<transport::exchange_control> start(dispatch_order order,
                                                             caf::actor reply_to) = 0;
};

using worker_channel_ptr = std::shared_ptr<worker_channel>;

/// The exchange an actor started on a channel and waits for: it tells that exchange's end from
/// a stale one, and cancels it while it runs.
class awaited_exchange {
public:
  /// Starts `order` on `channel`; its end goes to `reply_to`.
  void start(worker_channel& channel, dispatch_order order, caf::actor reply_to) {
    order_ = order.id;
    control_ = channel.start(std::move(order), std::move(reply_to));
  }

  /// True when `order` names this exchange's end; it then no longer runs.
  bool ends(std::uint64_t order) noexcept {
    if (order_ == 0 || order != order_) {
      return false;
    }
    order_ = 0;
    control_.reset();
    return true;
  }

  /// True while it runs (started, its end not seen yet).
  bool running() const noexcept { return order_ != 0; }

  /// Aborts it (its end then comes as `cancelled`); false when none runs.
  bool cancel() {
    if (!running()) {
      return false;
    }
    control_->cancel();
    return true;
  }

private:
  std::uint64_t order_ = 0; ///< The order in flight, 0 when none is.
  std::shared_ptr<transport::exchange_control> control_;
};

} // namespace troupe::actors
