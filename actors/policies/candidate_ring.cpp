#include "actors/policies/candidate_ring.hpp"

#include "actors/policies/strategy.hpp"

namespace troupe::actors {

void candidate_ring::on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                              protocol::worker_type role) {
  change = cursor_.advance(fleet, change);
  if (!change || !apply(*change, role)) {
    rebuild(fleet, role);
  }
}

bool candidate_ring::apply(const fleet_change& change, protocol::worker_type role) {
  for (auto& r : change.removed) {
    if (r.role != role) {
      continue;
    }
    auto it = member_of_.find(r.url);
    if (it != member_of_.end() && entry_of_[it->second] == r.entry && count_[it->second] > 1) {
      // Another worker shares the URL: which of them stands for it is the fleet's to say.
      return false;
    }
  }
  // Removed first (a new model card is an entry removed and one added: its member keeps its
  // points), then added; a URL no worker has any more leaves the ring.
  std::vector<std::uint32_t> touched;
  for (auto& r : change.removed) {
    if (r.role != role) {
      continue;
    }
    auto it = member_of_.find(r.url);
    if (it == member_of_.end()) {
      continue;
    }
    auto m = it->second;
    if (entry_of_[m] == r.entry) {
      entry_of_[m] = nullptr;
    }
    if (count_[m] > 0) {
      --count_[m];
    }
    touched.push_back(m);
  }
  std::vector<std::pair<std::string, std::uint32_t>> added;
  for (auto* w : change.added) {
    if (w->spec.type != role) {
      continue;
    }
    if (auto it = member_of_.find(w->spec.url); it != member_of_.end()) {
      auto m = it->second;
      ++count_[m];
      if (!entry_of_[m] || w->seq < entry_of_[m]->seq) {
        entry_of_[m] = w; // the first in registration order stands for the URL
      }
      continue;
    }
    auto m = new_member(w->spec.url);
    entry_of_[m] = w;
    count_[m] = 1;
    added.emplace_back(w->spec.url, m);
  }
  std::vector<std::uint32_t> gone;
  for (auto m : touched) {
    if (count_[m] == 0 && !names_[m].empty() && member_of_.count(names_[m])) {
      member_of_.erase(names_[m]);
      gone.push_back(m);
    }
  }
  ring_.add(added);
  drop_members(gone);
  return true;
}

void candidate_ring::rebuild(const fleet_snapshot& fleet, protocol::worker_type role) {
  ++rebuilds_;
  struct url_use {
    const worker_entry* first; ///< In registration order.
    std::uint32_t count;
  };
  std::unordered_map<std::string_view, url_use> now;
  for (auto& w : fleet.workers) {
    if (w->spec.type == role) {
      ++now.try_emplace(w->spec.url, url_use{w.get(), 0}).first->second.count;
    }
  }
  std::vector<std::uint32_t> gone;
  for (auto it = member_of_.begin(); it != member_of_.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    gone.push_back(it->second);
    it = member_of_.erase(it);
  }
  drop_members(gone);
  std::vector<std::pair<std::string, std::uint32_t>> added;
  for (auto& [url, use] : now) {
    std::string name(url);
    if (!member_of_.count(name)) {
      added.emplace_back(name, new_member(name));
    }
  }
  ring_.add(added);
  // Candidates are entries of this snapshot: picks find their members' workers by number.
  entry_of_.assign(names_.size(), nullptr);
  count_.assign(names_.size(), 0);
  for (auto& [url, use] : now) {
    auto m = member_of_.find(std::string(url))->second;
    entry_of_[m] = use.first;
    count_[m] = use.count;
  }
}

std::uint32_t candidate_ring::new_member(const std::string& url) {
  std::uint32_t m;
  if (!free_.empty()) {
    m = free_.back();
    free_.pop_back();
  } else {
    m = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back();
    entry_of_.push_back(nullptr);
    count_.push_back(0);
  }
  names_[m] = url;
  member_of_.emplace(url, m);
  return m;
}

/// Members `gone` (out of `member_of_` already) leave; their numbers are given again once the
/// ring has dropped their points.
void candidate_ring::drop_members(const std::vector<std::uint32_t>& gone) {
  for (auto m : gone) {
    names_[m].clear();
    entry_of_[m] = nullptr;
    count_[m] = 0;
  }
  ring_.remove(gone);
  for (auto m : ring_.take_freed()) {
    free_.push_back(m);
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
