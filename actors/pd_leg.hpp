#pragma once

#include "actors/fleet.hpp"
#include "actors/messages.hpp"

#include <caf/local_actor.hpp>
#include <caf/typed_actor.hpp>
#include <memory>
#include <string>

namespace troupe::actors {

/// One half of a prefill/decode dispatch: a child of the request actor that runs one exchange
/// with its worker through the worker's channel, and stops when the exchange is over. It monitors
/// its request actor: if that one dies, the leg cancels its exchange (the worker's load is
/// released either way).
using pd_leg_actor = caf::typed_actor<
    /// Sends the leg's request; replies with the exchange's outcome once it is over.
    caf::replies_to<dispatch_atom>::with<transport::exchange_result>,
    /// Aborts the leg's exchange (the other leg failed, or the client left).
    caf::reacts_to<cancel_atom>,
    /// The leg's exchange ended (sent by the worker's channel).
    caf::reacts_to<done_atom, std::uint64_t, transport::exchange_result>>;

/// What a leg sends, to whom, and where the response goes.
struct pd_leg_spec {
  protocol::worker_type role = protocol::worker_type::decode; ///< Prefill or decode.
  worker_entry_ptr worker;                                    ///< The worker of the leg.
  transport::upstream_call call;                              ///< Path, body, headers, deadline.
  std::shared_ptr<transport::response_sink> sink;             ///< Where the response goes.
  std::string request_id;                                     ///< For log lines.
};

/// Spawns a leg as a monitored child of `parent` (which gets a `down_msg` when the leg stops).
pd_leg_actor spawn_pd_leg(caf::local_actor* parent, pd_leg_spec spec);

} // namespace troupe::actors
