#pragma once

#include "protocol/type_ids.hpp"
#include "transport/upstream_exchange.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <cstdint>
#include <memory>

namespace troupe::actors {

/// Work for a worker's channel: one upstream exchange whose response goes to `sink`.
struct dispatch_order {
  std::uint64_t id = 0;          ///< Unique per node; the `done_atom` of its end names it.
  transport::upstream_call call; ///< What to send.
  std::shared_ptr<transport::response_sink> sink; ///< Where the response goes, as it arrives.
};

/// A unique id for a dispatch order.
std::uint64_t next_order_id() noexcept;

} // namespace troupe::actors

// Local-only message types: they hold sockets and callbacks, never cross the network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::dispatch_order)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::transport::exchange_result)
