#pragma once

// Internal to the request actor (request.cpp) and its prefill/decode path (pd_request.cpp).

#include "actors/request.hpp"
#include "actors/request/relay_sink.hpp"
#include "protocol/request_scan.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <optional>
#include <string>
#include <vector>

namespace troupe::actors {

/// The state of one request actor.
struct request_state {
  static inline const char* name = "request";

  services_ptr svc;
  std::shared_ptr<inbound_request> in;
  protocol::api_format format = protocol::api_format::openai;
  protocol::request_facts facts;
  std::chrono::steady_clock::time_point deadline;

  // -- regular dispatch --
  std::vector<std::string> tried; ///< Workers that failed this request.
  worker_entry_ptr worker;        ///< The current worker.
  std::uint64_t order_id = 0;     ///< The current dispatch order, 0 when none.
  std::shared_ptr<relay_sink> sink;
  std::optional<protocol::api_error> last_failure;
  /// The last failed attempt's answer, when it was a retryable status kept from the client:
  /// the client gets it if no other worker can be tried.
  std::shared_ptr<relay_sink> held;
  unsigned backoffs = 0; ///< Waits before a retry so far (the next one is longer).
  bool pinned = false;   ///< Sent to the worker storing the Responses object it names.
  bool located = false;  ///< The workers were asked for the Responses object the request names.
  /// The role of the worker a single dispatch goes to: regular, or prefill for the info
  /// routes of a fleet with only prefill/decode pairs.
  protocol::worker_type role = protocol::worker_type::regular;

  // -- prefill/decode dispatch (pd_request.cpp) --
  std::shared_ptr<struct pd_join> pd; ///< Set while the request is served by a pair.

  // -- outcome, for the log line and the metrics --
  unsigned status = 0;
  /// Set when the gateway answered with an error of its own (`fail_request` sets it; a path
  /// that answers errors another way sets it too, or the error counts as `upstream_status`).
  std::optional<protocol::error_code> error;
  std::chrono::microseconds ttft{0};
  std::string worker_ids; ///< Comma-separated.

  bool cancelled = false; ///< The client left.
  bool finished = false;
};

using request_self = request_actor::stateful_pointer<request_state>;

/// Answers with `err` (an error response, or an error event if a stream started) and stops.
void fail_request(request_self self, const protocol::api_error& err);

/// Logs the request's line, removes it from the tracker and stops the actor.
void finish_request(request_self self);

/// The upstream call for `worker`: the client's method, path and body, forwarded headers.
transport::upstream_call make_upstream_call(request_self self, const worker_entry& worker,
                                            std::string body);

/// The client error for an exchange that failed with `r`.
protocol::api_error exchange_error(const transport::exchange_result& r,
                                   std::chrono::seconds timeout);

/// Records that the request went to `worker_id` (for the log line and /admin/requests).
void note_worker(request_self self, const std::string& worker_id);

/// Picks a worker for a single dispatch (again after a failed attempt) and dispatches.
void select_worker(request_self self);

/// The worker known to store the Responses object the request names, or empty
/// (response_locate.cpp).
std::string stateful_worker(request_self self);

/// When the request names a Responses object this node does not know the place of, asks the
/// workers in turn, then calls `select_worker` again; returns false (doing nothing) otherwise
/// or once it was done (response_locate.cpp).
bool locate_response(request_self self);

/// Serves the request with a prefill/decode pair (pd_request.cpp).
void start_pd(request_self self);

/// The client left a request served by a pair: cancels both legs (pd_request.cpp).
void cancel_pd(request_self self);

} // namespace troupe::actors
