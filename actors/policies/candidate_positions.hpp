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
/// search on the order finds it. O(log candidates); entries of equal order (tests that do not
/// number them) are looked through one by one.

/// Sentinel of the lookups below.
inline constexpr std::size_t no_position = static_cast<std::size_t>(-1);

/// The first index of `cands` (sorted by `seq`) whose order is at least `seq`, or its size: a
/// `std::lower_bound` that reads fewer entries. Each probe reads a worker's entry, cold in a
/// large fleet, and a bisection of 4,000 candidates reads ~12 of them one after another. The
/// orders of a group are its workers' registration numbers, spread about evenly (most groups
/// are most of the fleet), so a guess in proportion between the first and the last lands on the
/// worker or next to it; from the guess, steps doubling outwards bracket the answer and a
/// bisection of the bracket ends. One or two entries read when the orders are even, never more
/// than twice a bisection's when they are not.
inline std::size_t seq_lower_bound(const std::vector<const worker_entry*>& cands,
                                   std::uint64_t seq) {
  const auto n = cands.size();
  if (n == 0 || cands.front()->seq >= seq) {
    return 0;
  }
  const auto first = cands.front()->seq;
  const auto last = cands.back()->seq;
  if (last < seq) {
    return n;
  }
  // first < seq <= last, so last > first and the guess is within [0, n - 1].
  auto guess =
      static_cast<std::size_t>(static_cast<double>(seq - first) /
                               static_cast<double>(last - first) * static_cast<double>(n - 1));
  guess = std::min(guess, n - 1);
  std::size_t lo; // the answer is in [lo, hi]
  std::size_t hi;
  if (cands[guess]->seq < seq) {
    lo = guess + 1;
    hi = n;
    for (std::size_t step = 1; lo + step - 1 < n; step *= 2) {
      auto probe = lo + step - 1;
      if (cands[probe]->seq >= seq) {
        hi = probe;
        break;
      }
      lo = probe + 1;
    }
  } else {
    lo = 0;
    hi = guess;
    for (std::size_t step = 1; step <= hi; step *= 2) {
      auto probe = hi - step;
      if (cands[probe]->seq < seq) {
        lo = probe + 1;
        break;
      }
      hi = probe;
    }
  }
  auto it = std::lower_bound(cands.begin() + static_cast<std::ptrdiff_t>(lo),
                             cands.begin() + static_cast<std::ptrdiff_t>(hi), seq,
                             [](const worker_entry* a, std::uint64_t s) { return a->seq < s; });
  return static_cast<std::size_t>(it - cands.begin());
}

/// The index in `cands` of the worker of registration order `seq` and registry id `id` (a
/// worker a strategy remembered: it may have left, or been registered again, since), or
/// no_position.
inline std::size_t position_of(const std::vector<const worker_entry*>& cands, std::uint64_t seq,
                               std::string_view id) {
  for (auto it = cands.begin() + static_cast<std::ptrdiff_t>(seq_lower_bound(cands, seq));
       it != cands.end() && (*it)->seq == seq; ++it) {
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
  for (auto it = cands.begin() + static_cast<std::ptrdiff_t>(seq_lower_bound(cands, w->seq));
       it != cands.end() && (*it)->seq == w->seq; ++it) {
    if (*it == w) {
      return static_cast<std::size_t>(it - cands.begin());
    }
  }
  return no_position;
}

} // namespace troupe::actors
