#pragma once

// Internal to the request actor (actors/request.cpp) and its paths (actors/request/).

#include "actors/request.hpp"
#include "actors/request/relay_sink.hpp"
#include "actors/request/request_path.hpp"
#include "protocol/request_scan.hpp"
#include "protocol/routes.hpp"

#include <boost/container/small_vector.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace troupe::actors {

/// The state of one request actor.
struct request_state {
  static inline const char* name = "request";

  services_ptr svc;
  std::shared_ptr<inbound_request> in;
  const protocol::operation_info* op = nullptr; ///< The operation's row.
  protocol::request_facts facts;
  std::chrono::steady_clock::time_point deadline;
  std::unique_ptr<request_path> path; ///< One worker per attempt, or a prefill/decode pair.
  /// The prompt, for a cache-aware policy: views into the body, or into a copy the path keeps.
  prompt_ref prompt;

  // -- attempts --
  std::vector<std::string> tried; ///< Workers that failed this request: never picked again.
  /// The last attempt's failure, when another attempt followed: the client's answer if the
  /// workers run out.
  std::optional<protocol::api_error> last_failure;
  unsigned backoffs = 0;   ///< Waits before a retry so far (the next one is longer).
  bool attempting = false; ///< An attempt runs (its end has not come yet).
  bool pinned = false;     ///< Sent to the worker storing the Responses object it names.
  bool located = false;    ///< The workers were asked for the Responses object the request names.
  awaited_exchange lookup; ///< The exchange asking a worker for it, while a lookup runs.
  /// What follows that exchange (response_locate.cpp).
  std::function<void(request_self, transport::exchange_result&)> lookup_then;

  // -- selection in progress --
  unsigned pending_picks = 0; ///< Policy answers still awaited.
  /// One per `path->picks()` entry (one, or a PD pair: in the state, not allocated).
  boost::container::small_vector<worker_entry_ptr, 2> picked;
  boost::container::small_vector<std::optional<protocol::api_error>, 2> pick_errors;

  // -- outcome, for the log line and the metrics --
  unsigned status = 0;
  /// Set when the gateway answered with an error of its own (`fail_request` sets it; a
  /// relayed worker error is the worker's, and counts as `upstream_status`).
  std::optional<protocol::error_code> error;
  std::chrono::microseconds ttft{0};
  std::string worker_ids; ///< Comma-separated attempts; a pair is `prefill+decode`.

  bool cancelled = false; ///< The client left.
  bool finished = false;
};

// -- the request actor's core (request.cpp), for its paths --

/// An attempt is over: the request retries on other workers, answers, or finishes.
void attempt_done(request_self self, attempt_end end);

/// Answers with `err` (an error response, or an error event if a stream started) and stops.
void fail_request(request_self self, const protocol::api_error& err);

/// Logs the request's line, removes it from the tracker and stops the actor.
void finish_request(request_self self);

/// Records that an attempt went to `workers` (for the log line and /admin/requests) and marks
/// the request dispatched.
void note_attempt(request_self self, std::span<const worker_entry_ptr> workers);

/// True while another attempt may follow this one (the retry budget is not spent).
bool may_retry(const request_state& st);

/// The upstream call for `worker`: the client's method, path and `body`, forwarded headers,
/// the request's deadline.
transport::upstream_call make_upstream_call(request_self self, const worker_entry& worker,
                                            transport::call_body body);

/// The client error for an exchange that failed with `r`.
protocol::api_error exchange_error(const transport::exchange_result& r,
                                   std::chrono::seconds timeout);

/// True when an exchange that ended with `r` failed before the worker saw the request (no
/// connection, or closed before any answer): another worker may be tried.
bool untouched(const transport::exchange_result& r);

/// A relay sink for the response of an attempt on `worker_id`, answering through `reply`: the
/// node's size limits, the request's `streaming` phase when an event stream starts, and, for an
/// operation that creates a Responses object, the worker remembered as the one storing it.
std::shared_ptr<relay_sink> make_relay_sink(request_self self,
                                            std::shared_ptr<transport::reply_channel> reply,
                                            const std::string& worker_id);

// -- Responses objects (response_locate.cpp) --

/// The worker known to store the Responses object the request names, or empty.
std::string stateful_worker(const request_state& st);

/// When the request names a Responses object this node does not know the place of, asks the
/// workers of `role` in turn and calls `then` once it knows (or nobody has it); returns false
/// (doing nothing) otherwise, or once it was done.
bool locate_response(request_self self, protocol::worker_type role, void (*then)(request_self));

/// The client left while a worker is asked for a Responses object: cancels that exchange,
/// whose end finishes the request. False when no lookup runs.
bool cancel_lookup(request_self self);

/// The exchange of order `order` ended: when it is the lookup's, goes on with the search and
/// returns true.
bool on_lookup_end(request_self self, std::uint64_t order, transport::exchange_result& r);

} // namespace troupe::actors
