#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::services {

/// Where a request is in its life.
enum class request_phase {
  queued,      ///< Waiting for an admission slot (`--max-concurrent-requests`).
  parsing,     ///< Reading and validating the body.
  selecting,   ///< Asking policies for a worker.
  locating,    ///< Asking workers which one stores the Responses object the request names.
  dispatched,  ///< Sent to a worker, waiting for its response head.
  backing_off, ///< A worker answered a retryable status: waiting before another worker.
  streaming,   ///< Relaying the response.
  joining,     ///< PD: waiting for the other leg.
  prefilling,  ///< PD in sequence (vLLM): the prefill leg runs; the decode leg waits for it.
  decoding,    ///< PD in sequence (vLLM): the prefill is done, the decode leg runs.
};

std::string_view to_string(request_phase p) noexcept;

/// The requests in flight on this node, for the admin endpoint and graceful shutdown. A request
/// holds its own entry (its ticket) and writes it at each phase change without a lookup: the
/// phase is an atomic, the model and workers sit under the entry's own lock. The tracker's lock
/// is taken only where a request begins and ends, and by readers. Each request has its own
/// entry: a client may send two requests with the same `x-request-id`, and each is tracked
/// until it ends.
class request_tracker {
public:
  /// One tracked request.
  class entry {
  public:
    entry(std::string id, std::string_view route)
        : id_(std::move(id)), route_(route), started_(std::chrono::steady_clock::now()) {}

  private:
    friend class request_tracker;
    const std::string id_;         ///< The request id (the client's, or one made here).
    const std::string_view route_; ///< The operation's name (static).
    const std::chrono::steady_clock::time_point started_;
    std::atomic<request_phase> phase_{request_phase::parsing};
    mutable std::mutex mx_; ///< Guards the model and the workers.
    std::string model_;
    std::vector<std::string> workers_;
    std::list<std::shared_ptr<entry>>::iterator pos_; ///< In the tracker's list, while in it.
    bool tracked_ = false;                            ///< In it (under the tracker's lock).
  };

  /// Names one tracked request; null names none.
  using ticket = std::shared_ptr<entry>;

  /// Adds a request with id `id` of the operation named `route` (a static name); its ticket
  /// names it in the calls below.
  ticket begin(std::string id, std::string_view route);

  /// Updates the phase (and, when given, the model and workers) of `t`; a ticket that ended
  /// (or null) is ignored.
  void update(const ticket& t, request_phase phase);
  void set_model(const ticket& t, const std::string& model);
  void add_worker(const ticket& t, const std::string& worker);

  /// Removes `t` (once; again, or null, is ignored).
  void end(const ticket& t);

  /// Requests in flight.
  std::size_t size() const;

  /// Requests older than `min_age`, as JSON objects (the oldest first).
  nlohmann::json list(std::chrono::milliseconds min_age) const;

private:
  mutable std::mutex mx_;
  std::list<ticket> entries_; ///< In the order they began.
  std::size_t size_ = 0;
};

} // namespace troupe::services
