#pragma once

#include <boost/asio/io_context.hpp>
#include <caf/actor_system_config.hpp>
#include <memory>

namespace troupe::gateway {

/// Runs every actor of a system on the threads of an asio io_context, next to the sockets.
///
/// CAF's stock schedulers park idle workers in uninterruptible sleeps and wake a clock thread
/// whenever an actor with timeouts terminates; on these machines that triples the latency of
/// a short request (see docs/performance.md). Here an actor job is an asio handler, and CAF's
/// timeouts are asio timers. At shutdown, `hand_back` routes scheduling back to CAF's own
/// worker (one thread, work sharing) so the actor system can stop after the io_context did.
class asio_scheduler {
public:
  /// Prepares `cfg` so that the actor system built from it schedules on `ioc`.
  asio_scheduler(caf::actor_system_config& cfg, boost::asio::io_context& ioc);
  ~asio_scheduler();

  asio_scheduler(const asio_scheduler&) = delete;
  asio_scheduler& operator=(const asio_scheduler&) = delete;

  /// Call once the io_context stopped for good: further actor jobs run on CAF's worker, and
  /// jobs still queued in the io_context are run now.
  void hand_back();

  struct state;

private:
  std::shared_ptr<state> state_;
};

} // namespace troupe::gateway
