#pragma once

#include "apps/troupe-sim/sim_server.hpp"
#include "apps/troupe-sim/sim_stats.hpp"
#include "protocol/error.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sim {

/// One request on its way through the simulator, and the way back to its client.
struct exchange {
  transport::request req;
  std::shared_ptr<sim_reply> reply;
  std::vector<std::string> params; ///< Segments matched by the route's `{}`.
  protocol::api_format format = protocol::api_format::openai; ///< The route's error format.
  std::optional<inflight> token; ///< Held while a data-plane request is in flight.
};

/// Answers `status` with `body` (no Content-Type when the body is empty).
void respond(sim_reply& reply, unsigned status, std::string body,
             std::string_view content_type = "application/json");

/// Answers `err` in the exchange's error format, with its status or `status` when not 0.
void respond_error(exchange& x, const protocol::api_error& err, unsigned status = 0);

/// The error a status stands for (to render an injected failure in the API's format).
protocol::error_code code_for_status(unsigned status) noexcept;

} // namespace troupe::sim
