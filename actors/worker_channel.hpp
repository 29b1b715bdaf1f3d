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

} // namespace troupe::actors
