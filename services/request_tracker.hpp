#pragma once

#include <atomic>
#include <boost/container/small_vector.hpp>
#include <boost/intrusive/list.hpp>
#include <chrono>
#include <cstdint>
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
/// until it ends. An entry is one allocation: the tracker's list runs through the entries
/// themselves, and the workers of the usual one or two attempts sit in the entry.
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
    /// The workers' ids, shared with the workers' entries (no copy per request).
    boost::container::small_vector<std::shared_ptr<const std::string>, 2> workers_;
    boost::intrusive::list_member_hook<> hook_; ///< In the tracker's list, while in it.
    /// The list's hold on the entry while in it (so a ticket dropped without `end` stays
    /// listed, as a request that never ended, rather than dangling).
    std::shared_ptr<entry> listed_;
  };

  /// Names one tracked request; null names none.
  using ticket = std::shared_ptr<entry>;

  request_tracker() = default;
  request_tracker(const request_tracker&) = delete;
  request_tracker& operator=(const request_tracker&) = delete;
  /// Lets go of the entries still listed (their tickets stay valid where held).
  ~request_tracker();

  /// Adds a request with id `id` of the operation named `route` (a static name); its ticket
  /// names it in the calls below.
  ticket begin(std::string id, std::string_view route);

  /// Updates the phase (and, when given, the model and workers) of `t`; a ticket that ended
  /// (or null) is ignored.
  static void update(const ticket& t, request_phase phase);
  void set_model(const ticket& t, const std::string& model);
  /// `worker` is the worker's id, shared with whoever owns it (an aliasing pointer into the
  /// worker's entry costs no allocation); the string overload copies it.
  void add_worker(const ticket& t, std::shared_ptr<const std::string> worker);
  void add_worker(const ticket& t, std::string_view worker);

  /// Removes `t` (once; again, or null, is ignored).
  void end(const ticket& t);

  /// Requests in flight.
  std::size_t size() const;

  /// Requests older than `min_age`, as JSON objects (the oldest first).
  nlohmann::json list(std::chrono::milliseconds min_age) const;

private:
  mutable std::mutex mx_;
  using entry_list = boost::intrusive::list<
      entry,
      boost::intrusive::member_hook<entry, boost::intrusive::list_member_hook<>, &entry::hook_>>;
  entry_list entries_; ///< In the order they began (constant-time size).
};

} // namespace troupe::services
