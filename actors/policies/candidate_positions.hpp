#pragma once

#include "actors/fleet.hpp"

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::actors {

/// Where a worker sits in a candidate list of the fleet index, without a scan per lookup: a
/// map per list (by entry, by id), built on the list's first lookup and kept while the
/// snapshot lasts (the index's lists do not change once published). `clear()` on every new
/// snapshot: a list freed with the old one may be reused at the same address.
class candidate_positions {
public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// Forgets every list (a new fleet snapshot).
  void clear() noexcept { lists_.clear(); }

  /// The index of `w` in `cands`, or npos.
  std::size_t of(const std::vector<const worker_entry*>& cands, const worker_entry* w) {
    auto& m = list(cands);
    if (m.by_entry.empty() && !cands.empty()) {
      m.by_entry.reserve(cands.size());
      for (std::size_t i = 0; i < cands.size(); ++i) {
        m.by_entry.emplace(cands[i], i);
      }
    }
    auto it = m.by_entry.find(w);
    return it == m.by_entry.end() ? npos : it->second;
  }

  /// The index in `cands` of the worker with registry id `id`, or npos.
  std::size_t of_id(const std::vector<const worker_entry*>& cands, std::string_view id) {
    auto& m = list(cands);
    if (m.by_id.empty() && !cands.empty()) {
      m.by_id.reserve(cands.size());
      for (std::size_t i = 0; i < cands.size(); ++i) {
        m.by_id.emplace(cands[i]->id, i);
      }
    }
    auto it = m.by_id.find(id);
    return it == m.by_id.end() ? npos : it->second;
  }

private:
  struct maps {
    std::size_t size = 0;
    std::unordered_map<const worker_entry*, std::size_t> by_entry;
    std::unordered_map<std::string_view, std::size_t> by_id; ///< Views of the entries' ids.
  };

  maps& list(const std::vector<const worker_entry*>& cands) {
    auto& m = lists_[&cands];
    if (m.size != cands.size()) { // not the list these maps were built for
      m = maps{};
      m.size = cands.size();
    }
    return m;
  }

  std::unordered_map<const void*, maps> lists_; ///< By list address.
};

} // namespace troupe::actors
