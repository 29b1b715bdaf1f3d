#include "actors/messages.hpp"

#include <atomic>

namespace troupe::actors {

std::uint64_t next_order_id() noexcept {
  // Process-wide by design: ids only need to be unique within this node.
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

} // namespace troupe::actors
