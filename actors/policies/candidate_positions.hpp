#pragma once

#include "actors/fleet.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// Where a worker sits in a candidate list of the fleet index, without a scan and without a
/// map to keep: the index lists workers in registration order (`worker_entry::seq`), so a
/// binary search on the order finds it. O(log candidates); entries of equal order (tests that
/// do not number them) are looked through one by one.

/// Sentinel of the lookups below.
inline constexpr std::size_t no_position = static_cast<std::size_t>(-1);

/// The index in `cands` of the worker of registration order `seq` and registry id `id` (a
/// worker a strategy remembered: it may have left, or been registered again, since), or
/// no_position.
inline std::size_t position_of(const std::vector<const worker_entry*>& cands, std::uint64_t seq,
                               std::string_view id) {
  auto lo = std::lower_bound(cands.begin(), cands.end(), seq,
                             [](const worker_entry* a, std::uint64_t s) { return a->seq < s; });
  for (auto it = lo; it != cands.end() && (*it)->seq == seq; ++it) {
    if ((*it)->id == id) {
      return static_cast<std::size_t>(it - cands.begin());
    }
  }
  return no_position;
}

/// The index of `w` (an entry of the same snapshot as `cands`) in `cands`, or no_position.
inline std::size_t position_of(const std::vector<const worker_entry*>& cands,
                               const worker_entry* w) {
  if (!w) {
    return no_position;
  }
  auto lo = std::lower_bound(cands.begin(), cands.end(), w->seq,
                             [](const worker_entry* a, std::uint64_t s) { return a->seq < s; });
  for (auto it = lo; it != cands.end() && (*it)->seq == w->seq; ++it) {
    if (*it == w) {
      return static_cast<std::size_t>(it - cands.begin());
    }
  }
  return no_position;
}

} // namespace troupe::actors
