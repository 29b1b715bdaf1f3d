#pragma once

// CAF's per-thread log context, dropped on the request path.

#include <caf/logger.hpp>

namespace troupe::actors {

/// Clears this thread's CAF logger, which every `spawn` sets. While it is set, each launch,
/// resume and destruction of an actor on the thread records the actor's id in the logger's
/// per-thread map under a spinlock (`caf::logger::thread_local_aid`, ~1k instructions per
/// request) for log lines that Debian's CAF (built quiet) never writes: the gateway logs
/// through spdlog. Call it after a spawn on the request path.
inline void drop_caf_log_context() noexcept {
  caf::logger::set_current_actor_system(nullptr);
}

} // namespace troupe::actors
