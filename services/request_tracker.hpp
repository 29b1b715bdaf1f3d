#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
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

/// The requests in flight on this node, for the admin endpoint and graceful shutdown. Request
/// actors write their own entry at each phase change (a short lock; no message on the hot path).
/// An entry is named by the ticket `begin` gave, not by the request id: a client may send two
/// requests with the same `x-request-id`, and each is tracked until it ends.
class request_tracker {
public:
  /// Names one tracked request; 0 names none.
  using ticket = std::uint64_t;

  struct entry {
    std::string id; ///< The request id (the client's `x-request-id`, or one made here).
    std::string route;
    std::string model;
    request_phase phase = request_phase::parsing;
    std::vector<std::string> workers;
    std::chrono::steady_clock::time_point started;
  };

  /// Adds a request with id `id`; its ticket (never 0) names it in the calls below.
  ticket begin(const std::string& id, std::string route);

  /// Updates the phase (and, when given, the model and workers) of `t`; a ticket that ended
  /// (or 0) is ignored.
  void update(ticket t, request_phase phase);
  void set_model(ticket t, const std::string& model);
  void add_worker(ticket t, const std::string& worker);

  /// Removes `t`.
  void end(ticket t);

  /// Requests in flight.
  std::size_t size() const;

  /// Requests older than `min_age`, as JSON objects (the oldest first).
  nlohmann::json list(std::chrono::milliseconds min_age) const;

private:
  mutable std::mutex mx_;
  ticket next_ = 1;
  std::unordered_map<ticket, entry> entries_;
};

} // namespace troupe::services
