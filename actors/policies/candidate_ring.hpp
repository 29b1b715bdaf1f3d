#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/candidate_positions.hpp"
#include "actors/policies/fleet_cursor.hpp"
#include "actors/policies/hash_ring.hpp"
#include "actors/policies/selection.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::actors {

/// A hash ring of the workers of one role (by URL, so every gateway node and a restarted one
/// place a key alike), looked up among a pick's candidates: a key belongs to the first
/// candidate on the ring after it, walking past workers that cannot take the request now, so
/// only their keys move, and they come back when those recover. Used by `consistent_hash`
/// (keyed by the routing key) and `prefix_hash` (by the prompt's head).
///
/// A lookup costs O(log points) plus a step per point walked past. A fleet change costs
/// O(workers that came or went) by the snapshot's `fleet_change` (hash_ring keeps that
/// true of its points too); a snapshot without one is compared with the members whole.
class candidate_ring {
public:
  static constexpr std::size_t npos = hash_ring::npos;

  /// Points per worker (ketama's count): a worker's share of the keys stays within ~10-15% of
  /// 1/N (hash_ring_test), and a ring of 64 workers is 10k points.
  static constexpr std::size_t virtual_nodes = 160;

  /// Members: the workers of `role` in `fleet`. Only those that came or went change the ring.
  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) {
    on_fleet(fleet, fleet.change.get(), role);
  }

  /// The same with `change` leading to `fleet` from the snapshot taken in before.
  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                protocol::worker_type role);

  /// The index in `cands` (a list of the fleet index) of the candidate owning `key` among
  /// those that may take `sel` now (`eligible`), or npos when none of them is a member.
  std::size_t find(std::string_view key, const std::vector<const worker_entry*>& cands,
                   const selection& sel);

  /// Workers on the ring.
  std::size_t members() const noexcept { return ring_.members(); }

  /// Points on the ring.
  std::size_t points() const noexcept { return ring_.size(); }

  /// Snapshots taken in whole rather than by their change (for tests and the admin view).
  std::uint64_t rebuilds() const noexcept { return rebuilds_; }

private:
  /// Applies `change`; false (nothing changed yet) when it cannot be applied alone.
  bool apply(const fleet_change& change, protocol::worker_type role);
  void rebuild(const fleet_snapshot& fleet, protocol::worker_type role);
  std::uint32_t new_member(const std::string& url);
  void drop_members(const std::vector<std::uint32_t>& gone);

  fleet_cursor cursor_;
  hash_ring ring_{virtual_nodes};
  std::unordered_map<std::string, std::uint32_t> member_of_; ///< URL -> member number.
  std::vector<std::string> names_;                           ///< Member number -> URL.
  std::vector<std::uint32_t> free_;                          ///< Numbers free to give again.
  /// Member number -> the first worker (registration order) of the snapshot with its URL.
  std::vector<const worker_entry*> entry_of_;
  std::vector<std::uint32_t> count_; ///< Member number -> workers with its URL (usually 1).
  std::uint64_t rebuilds_ = 0;
};

} // namespace troupe::actors
