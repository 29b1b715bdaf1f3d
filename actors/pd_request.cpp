#include "actors/request_state.hpp"

namespace troupe::actors {

// Prefill/decode dual dispatch lands with issue 3; until then a PD-only model is refused
// clearly instead of being sent to half a pair.
void start_pd(request_self self) {
  fail_request(self, {protocol::error_code::no_worker_available,
                      "prefill/decode serving is not available on this node yet",
                      {}});
}

} // namespace troupe::actors
