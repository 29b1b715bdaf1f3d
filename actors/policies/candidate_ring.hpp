#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/candidate_positions.hpp"
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
/// A lookup costs O(log points) plus a step per point walked past; a fleet change merges the
/// points of the members that came and drops those of the members that went (no rebuild of
/// every worker's points).
class candidate_ring {
public:
  static constexpr std::size_t npos = hash_ring::npos;

  /// Points per worker (ketama's count): a worker's share of the keys stays within ~10-15% of
  /// 1/N (hash_ring_test), and a ring of 64 workers is 10k points.
  static constexpr std::size_t virtual_nodes = 160;

  /// Members: the workers of `role` in `fleet`. Only those that came or went change the ring.
  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role);

  /// The index in `cands` (a list of the fleet index) of the candidate owning `key` among
  /// those that may take `sel` now (`eligible`), or npos when none of them is a member.
  std::size_t find(std::string_view key, const std::vector<const worker_entry*>& cands,
                   const selection& sel);

  /// Workers on the ring.
  std::size_t members() const noexcept { return ring_.members(); }

  /// Points on the ring.
  std::size_t points() const noexcept { return ring_.size(); }

private:
  hash_ring ring_{virtual_nodes};
  std::unordered_map<std::string, std::uint32_t> member_of_; ///< URL -> member number.
  std::vector<std::string> names_;                           ///< Member number -> URL.
  std::vector<std::uint32_t> free_;                          ///< Numbers of members gone.
  std::vector<const worker_entry*> entry_of_; ///< Member number -> entry of the snapshot.
};

} // namespace troupe::actors
