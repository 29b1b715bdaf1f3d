#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/hash_ring.hpp"

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
class candidate_ring {
public:
  static constexpr std::size_t npos = hash_ring::npos;

  /// Points per worker (ketama's count): a worker's share of the keys stays within ~10-15% of
  /// 1/N (hash_ring_test), and a ring of 64 workers is 10k points.
  static constexpr std::size_t virtual_nodes = 160;

  /// Members: the workers of `role` in `fleet`. Rebuilt only when they change.
  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role);

  /// The index in `cands` of the candidate owning `key`, or npos when no candidate is a member.
  std::size_t find(std::string_view key, const std::vector<const worker_entry*>& cands);

  /// Workers on the ring.
  std::size_t members() const noexcept { return ring_.members(); }

  /// Points on the ring.
  std::size_t points() const noexcept { return ring_.size(); }

private:
  std::size_t member(const worker_entry& w) const;

  hash_ring ring_{virtual_nodes};
  std::vector<std::string> urls_;                                 ///< Ring members, by URL.
  std::unordered_map<std::string, std::size_t> member_of_;        ///< URL -> member.
  std::unordered_map<const worker_entry*, std::size_t> by_entry_; ///< Snapshot entry -> member.
  std::vector<char> eligible_;                                    ///< Scratch, by member.
  std::vector<std::size_t> candidate_;                            ///< Scratch: member -> candidate.
};

} // namespace troupe::actors
