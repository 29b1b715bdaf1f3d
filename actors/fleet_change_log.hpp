#pragma once

#include "actors/fleet.hpp"

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

/// The registry's record of what changed since the snapshot its listeners last heard of: the
/// `fleet_change` each new snapshot carries. An entry that comes and goes between two
/// notifications appears in neither list. Holds addresses only, never an entry.
class fleet_change_log {
public:
  /// `w` is a live entry now (appended, or in the place of another).
  void added(const worker_entry& w);

  /// `w` is no live entry any more (erased, or replaced). Called before it may be freed.
  void removed(const worker_entry& w);

  /// The change from the last notified snapshot to the fleet as it is now; nullptr after
  /// `lose` (until the next `notified`).
  std::shared_ptr<const fleet_change> change() const;

  /// The listeners heard of the snapshot of `version`: changes start from there.
  void notified(std::uint64_t version);

  /// The fleet changed in a way not recorded (the registry stopping): snapshots carry no
  /// change until the next `notified`.
  void lose() noexcept { lost_ = true; }

private:
  std::uint64_t from_ = 0;
  bool lost_ = false;
  std::vector<const worker_entry*> added_order_;  ///< Live entries added, in order.
  std::unordered_set<const worker_entry*> added_; ///< The same, to look up.
  std::vector<fleet_change::gone> removed_;
};

} // namespace troupe::actors
