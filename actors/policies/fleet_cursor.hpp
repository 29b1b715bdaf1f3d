#pragma once

#include "actors/fleet.hpp"

#include <cstdint>
#include <optional>

namespace troupe::actors {

/// Which snapshot a strategy's per-worker state follows: the change of each new snapshot is
/// applied when it starts from that one, else the snapshot is taken in whole (the first one, a
/// snapshot seen out of turn, or one that came without its change).
class fleet_cursor {
public:
  /// The change from the snapshot taken in last to `fleet`, or nullptr when there is none to
  /// apply (take `fleet` in whole). `fleet` counts as taken in from now on.
  const fleet_change* advance(const fleet_snapshot& fleet) noexcept {
    return advance(fleet, fleet.change.get());
  }

  /// The same with `c` the change to `fleet` (the policy's, composed of several snapshots').
  const fleet_change* advance(const fleet_snapshot& fleet, const fleet_change* c) noexcept {
    if (!seen_ || !c || c->from != *seen_) {
      c = nullptr;
    }
    seen_ = fleet.version;
    return c;
  }

private:
  std::optional<std::uint64_t> seen_;
};

} // namespace troupe::actors
