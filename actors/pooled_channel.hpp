#pragma once

#include "actors/worker_channel.hpp"
#include "actors/worker_live.hpp"
#include "actors/worker_proxy.hpp"
#include "transport/upstream_pool.hpp"

#include <atomic>
#include <caf/weak_intrusive_ptr.hpp>
#include <memory>
#include <string>

namespace troupe::actors {

/// True when `r` says the worker failed: no connection, a broken one, a timeout, or a 5xx
/// answer. A cancelled exchange and a success refused by a size limit say nothing about it.
bool is_worker_failure(const transport::exchange_result& r) noexcept;

/// The channel of a real worker: exchanges on its connection pool. It keeps the worker's count
/// of requests in flight (`worker_live::in_flight`) and its failure streak, and sends its proxy
/// only what the proxy must act on: every failure and every outcome while the breaker is
/// half-open (`outcome_atom`), and, once the proxy is closing, the end of the last exchange in
/// flight (`idle_atom`). A success with the breaker closed, the common case, takes no message.
class pooled_channel final : public worker_channel,
                             public std::enable_shared_from_this<pooled_channel> {
public:
  /// A channel to the worker `pool` connects to; `path_prefix` (the path of the worker's url)
  /// goes before every target.
  pooled_channel(std::shared_ptr<transport::upstream_pool> pool, std::string path_prefix,
                 std::shared_ptr<worker_live> live);

  std::shared_ptr<transport::exchange_control> start(dispatch_order order,
                                                     caf::actor reply_to) override;

  /// The proxy told of outcomes (held weakly: a removed worker's proxy ends when unreachable).
  void bind(const worker_proxy_actor& proxy);

  /// From now on the proxy is told when no exchange is in flight any more (it drains or stops).
  void close() noexcept;

  /// Failed requests in a row, ended since the last success.
  unsigned failure_streak() const noexcept {
    return failure_streak_.load(std::memory_order_relaxed);
  }

private:
  /// Counts the outcome `r` of an exchange that just ended, and tells the proxy what it must act
  /// on.
  void settle(const transport::exchange_result& r);

  std::shared_ptr<transport::upstream_pool> pool_;
  std::string path_prefix_;
  std::shared_ptr<worker_live> live_;
  caf::weak_actor_ptr proxy_;
  std::atomic<unsigned> failure_streak_{0};
  std::atomic<bool> closing_{false};
};

} // namespace troupe::actors
