#pragma once

// Internal to the request actor: how one attempt of a request reaches workers. The request
// actor (actors/request.cpp) owns everything an attempt has in common — selection, retries,
// the workers tried, the answer when none is left, the log line — and hands the picked workers
// to its path: one worker (single_path.cpp) or a prefill/decode pair (pd_path.cpp).

#include "actors/policy.hpp"
#include "actors/request.hpp"
#include "protocol/error.hpp"
#include "protocol/worker.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace troupe::actors {

struct request_state;

/// The request actor's handle to itself (its state is `request_state`).
using request_self = request_actor::stateful_pointer<request_state>;

/// One worker an attempt needs: its role, and the policy that picks it.
struct pick_spec {
  protocol::worker_type role;
  policy_actor policy;
  const direct_picker* picker = nullptr; ///< The policy's, when it has one.
};

/// When a failed attempt may be tried again on other workers.
enum class retry_kind {
  none,          ///< Never: the client got something, or the failure is final.
  at_once,       ///< Nothing reached a worker (no connection, or closed before any answer).
  after_backoff, ///< A worker answered a retryable status, kept from the client.
};

/// What one attempt came to, as its path reports it to the request actor.
struct attempt_end {
  bool cancelled = false; ///< It was stopped: the client left.
  /// Why it failed; nothing when the client's response is complete.
  std::optional<protocol::api_error> failure;
  /// The failure is a worker's own error answer, which the path keeps: `fail` with
  /// `worker_answer` relays it as the worker gave it.
  bool worker_answer = false;
  retry_kind retry = retry_kind::none;
  std::vector<std::string> failed_workers; ///< Not to be picked again for this request.
  unsigned status = 0;                     ///< The worker's HTTP status (0: none).
  std::chrono::microseconds ttft{0};       ///< Time to the first byte of the response.
  std::string detail; ///< For the log line, when it says more than `failure`'s message.
};

/// How the attempts of one request reach workers.
class request_path {
public:
  virtual ~request_path() = default;

  /// Reads what the path needs from the request before its first attempt; a client error
  /// refuses the request.
  virtual std::optional<protocol::api_error> prepare(request_self self) = 0;

  /// The workers an attempt needs, one per entry; when several policies cannot pick, the
  /// client is told the first one's error.
  virtual std::span<const pick_spec> picks() const = 0;

  /// The role of the worker that stores the Responses objects this path creates or reads.
  virtual protocol::worker_type stateful_role() const = 0;

  /// Starts an attempt on `workers` (in `picks()` order; the path may move them out). Its
  /// end comes to `attempt_done`.
  virtual void start(request_self self, std::span<worker_entry_ptr> workers) = 0;

  /// An exchange the path started on a worker's channel ended (order `order`). The default:
  /// the path starts none of its own (its legs do).
  virtual void on_exchange_end(request_self self, std::uint64_t order,
                               transport::exchange_result& r) {
    (void)self, (void)order, (void)r;
  }

  /// The client left: stops the attempt in flight, whose end then comes as cancelled. False
  /// when none runs.
  virtual bool cancel(request_self self) = 0;

  /// Ends the client's response with `err` (an error response, or an error event when a
  /// stream is under way), or with `worker_answer` with the worker's error answer the last
  /// attempt kept. The status the client got; nothing when no attempt ever ran, so the
  /// request actor answers itself.
  virtual std::optional<unsigned> fail(request_self self, const protocol::api_error& err,
                                       bool worker_answer) = 0;

  /// Answers the worker's answer that an earlier attempt kept for a retry (`after_backoff`),
  /// as the worker gave it, when there is one: the status the client got.
  virtual std::optional<unsigned> release_kept() = 0;

  /// Forgets a kept answer: a later attempt failed in another way.
  virtual void drop_kept() = 0;
};

/// One worker of `role` per attempt, picked by the regular policy (`role` is prefill or
/// decode for the routes a fleet of pairs answers with one worker).
std::unique_ptr<request_path> make_single_path(const gateway_services& svc,
                                               protocol::worker_type role);

/// A prefill/decode pair per attempt (docs/pd.md), each half picked by its own policy.
std::unique_ptr<request_path> make_pd_path(const gateway_services& svc);

} // namespace troupe::actors
