#include "apps/troupe-sim/api_family.hpp"

namespace troupe::sim {

void api_family::stream_error(const gen_state&, const protocol::api_error& err, event_sink& out) {
  auto body = protocol::render_error_body(err, format());
  if (format() == protocol::api_format::anthropic) {
    out.event(body, "error");
    return;
  }
  out.event(body);
  out.event("[DONE]");
}

} // namespace troupe::sim
