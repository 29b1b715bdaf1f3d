#pragma once

// The door of the data plane: admission control between the route table and the request
// actors (docs/architecture.md, "Admission control").

#include "actors/gateway_config.hpp"
#include "actors/request.hpp"
#include "services/admission.hpp"

#include <boost/asio/io_context.hpp>
#include <memory>

namespace troupe::gateway {

/// Admission control as `cfg` sets it, its alarm a timer on `ioc`; null when `cfg` sets no
/// limit (`max_concurrent_requests <= 0`). Waits are capped at the request timeout.
std::shared_ptr<services::admission_control> make_admission(boost::asio::io_context& ioc,
                                                            const actors::gateway_config& cfg);

/// Starts `in` (spawns its request actor) once admission control lets it in: at once with a
/// free slot (or no limit), else after waiting its turn in the queue. A full queue answers
/// 429 at once (`Retry-After: 1`), a wait past the queue timeout 408, both in the route's
/// error format. While it waits the request shows as `queued` in the tracker, and a client
/// that leaves takes its place in the queue with it.
void admit_request(const actors::services_ptr& svc, std::shared_ptr<actors::inbound_request> in);

} // namespace troupe::gateway
