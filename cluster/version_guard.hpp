#pragma once

#include "protocol/cluster_wire.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::cluster {

/// Record versions are wall-clock milliseconds (a hybrid logical clock): a record versioned far
/// ahead of this node's clock would outlive every later write (a version of 2^64-1 can never be
/// replaced) and drag the clock of every node that took it. Such records are refused.
class version_guard {
public:
  explicit version_guard(std::chrono::milliseconds tolerance) : tolerance_(tolerance) {}

  /// Removes from `records` those whose version is more than the tolerance ahead of `now_ms`;
  /// returns a line for each one removed (worker id, origin, how far ahead).
  std::vector<std::string> remove_ahead(std::vector<protocol::worker_record>& records,
                                        std::int64_t now_ms) const;

  std::chrono::milliseconds tolerance() const { return tolerance_; }

private:
  std::chrono::milliseconds tolerance_;
};

} // namespace troupe::cluster
