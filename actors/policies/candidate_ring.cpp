#include "actors/policies/candidate_ring.hpp"

#include "actors/policies/strategy.hpp"

namespace troupe::actors {

void candidate_ring::on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) {
  std::unordered_map<std::string_view, const worker_entry*> now;
  for (auto& w : fleet.workers) {
    if (w->spec.type == role) {
      now.emplace(w->spec.url, w.get());
    }
  }
  std::vector<char> gone(names_.size(), 0);
  bool any_gone = false;
  for (auto it = member_of_.begin(); it != member_of_.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    gone[it->second] = 1;
    any_gone = true;
    free_.push_back(it->second);
    names_[it->second].clear();
    it = member_of_.erase(it);
  }
  if (any_gone) {
    ring_.remove_if([&](std::size_t m) { return m < gone.size() && gone[m]; });
  }
  std::vector<std::pair<std::string, std::uint32_t>> added;
  for (auto& [url, w] : now) {
    if (member_of_.count(std::string(url))) {
      continue;
    }
    std::uint32_t m;
    if (!free_.empty()) {
      m = free_.back();
      free_.pop_back();
    } else {
      m = static_cast<std::uint32_t>(names_.size());
      names_.emplace_back();
    }
    names_[m] = std::string(url);
    member_of_.emplace(std::string(url), m);
    added.emplace_back(std::string(url), m);
  }
  if (!added.empty()) {
    ring_.add(added);
  }
  // Candidates are entries of this snapshot: picks find their members' workers by number.
  entry_of_.assign(names_.size(), nullptr);
  for (auto& [url, w] : now) {
    entry_of_[member_of_.find(std::string(url))->second] = w;
  }
}

std::size_t candidate_ring::find(std::string_view key,
                                 const std::vector<const worker_entry*>& cands,
                                 const selection& sel) {
  if (ring_.members() == 0 || cands.empty()) {
    return npos;
  }
  // A walk from the key's point: O(log points) to start, a step per point passed. A member
  // qualifies when its worker is one of these candidates (this model and provider) and may
  // take the request now.
  std::size_t k = npos;
  ring_.find_if(key, [&](std::size_t member) {
    auto* w = member < entry_of_.size() ? entry_of_[member] : nullptr;
    if (!w || !eligible(*w, sel)) {
      return false;
    }
    k = position_of(cands, w);
    return k != npos;
  });
  return k;
}

} // namespace troupe::actors
