#pragma once

#include "actors/fleet.hpp"

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

/// What changed since a snapshot: the registry's record since the one its listeners last
/// heard of (the `fleet_change` each new snapshot carries), and a policy's since the one its
/// strategy took in last (the changes of the snapshots after it, composed). An entry that
/// comes and goes in between appears in neither list. Holds addresses only, never an entry.
class fleet_change_log {
public:
  /// `w` is a live entry now (appended, or in the place of another).
  void added(const worker_entry& w);

  /// `w` is no live entry any more (erased, or replaced). Called before it may be freed.
  void removed(const worker_entry& w) { removed({&w, w.id, w.spec.url, w.spec.type}); }

  /// The entry `g` names is no live entry any more (it may be freed already).
  void removed(const fleet_change::gone& g);

  /// Then `next` happened (the change of the snapshot after the last one this log follows).
  void merge(const fleet_change& next);

  /// Entries added and removed so far.
  std::size_t size() const noexcept { return added_order_.size() + removed_.size(); }

  /// The change from the last notified snapshot to the fleet as it is now; nullptr after
  /// `lose` (until the next `notified`).
  std::shared_ptr<const fleet_change> change() const;

  /// The listeners heard of (the strategy took in) the snapshot of `version`: changes start
  /// from there.
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
