#pragma once

#include "actors/gateway_services.hpp"
#include "actors/messages.hpp"
#include "protocol/routes.hpp"
#include "services/admission.hpp"
#include "services/request_tracker.hpp"
#include "transport/http_types.hpp"
#include "transport/reply_channel.hpp"

#include <caf/typed_actor.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace troupe::actors {

/// One client request, from parse to last byte: validates it, asks a policy for a worker,
/// starts the exchange on that worker's channel, retries on another worker when the first fails
/// before any byte or answers a retryable status, and ends the response whatever happens. Dies with
/// its response.
using request_actor = caf::typed_actor<
    /// The client disconnected: abort the upstream exchange and stop.
    caf::reacts_to<cancel_atom>,
    /// The wait before a retry is over: pick another worker.
    caf::reacts_to<tick_atom>,
    /// An exchange the request started on a worker's channel ended (sent by the channel).
    caf::reacts_to<done_atom, std::uint64_t, transport::exchange_result>>;

/// A request as the endpoint layer hands it over.
struct inbound_request {
  protocol::operation op;
  transport::request req;
  std::shared_ptr<transport::reply_channel> reply;
  std::string request_id;
  /// Its entry in the node's request tracker (null until tracked).
  services::request_tracker::ticket track;
  std::chrono::steady_clock::time_point received;
  std::vector<std::string> params; ///< Values of the route's `{...}` segments (a response id).
  /// The request's admission slot, when admission control is on: it goes back when the
  /// request actor's state is destroyed, whatever ended the request.
  services::admission_permit permit;
};

/// Spawns the actor for `in`. It registers for the client's disconnect itself.
request_actor spawn_request(const services_ptr& svc, std::shared_ptr<inbound_request> in);

} // namespace troupe::actors
