#include "actors/policies/tenant_map.hpp"

#include <unordered_set>

namespace troupe::actors {

tenant_map::tenant tenant_map::number(const std::string& id) {
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    return it->second;
  }
  tenant t;
  if (!free_.empty()) {
    t = free_.back();
    free_.pop_back();
  } else {
    t = static_cast<tenant>(entry_of_.size());
    entry_of_.push_back(nullptr);
  }
  by_id_.emplace(id, t);
  return t;
}

tenant_map::tenant tenant_map::of(const worker_entry& w) {
  if (auto* t = by_entry_.find(&w)) {
    return *t;
  }
  // A candidate of a snapshot this map was not shown (tests): known from now on.
  auto t = number(w.id);
  by_entry_.insert_or_assign(&w, t);
  entry_of_[t] = &w;
  return t;
}

const tenant_map::tenant* tenant_map::find(std::string_view id) const {
  auto it = by_id_.find(id);
  return it != by_id_.end() ? &it->second : nullptr;
}

const tenant_map::tenant* tenant_map::find(const worker_entry& w) const {
  if (auto* t = by_entry_.find(&w)) {
    return t;
  }
  return find(std::string_view{w.id});
}

void tenant_map::on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                          protocol::worker_type role, const forget_fn& forget) {
  if ((change = cursor_.advance(fleet, change))) {
    apply(*change, role, forget);
  } else {
    rebuild(fleet, role, forget);
  }
}

void tenant_map::apply(const fleet_change& change, protocol::worker_type role,
                       const forget_fn& forget) {
  // Removed first (a new model card is an entry removed and one added with the same id: it
  // keeps its number), then added; then the ids that did not come back are forgotten.
  std::vector<std::string> left;
  for (auto& r : change.removed) {
    if (r.role != role) {
      continue;
    }
    by_entry_.erase(r.entry);
    if (auto it = by_id_.find(r.id); it != by_id_.end()) {
      if (entry_of_[it->second] == r.entry) {
        entry_of_[it->second] = nullptr;
      }
      left.push_back(r.id);
    }
  }
  for (auto* w : change.added) {
    if (w->spec.type != role) {
      continue;
    }
    auto t = number(w->id);
    by_entry_.insert_or_assign(w, t);
    entry_of_[t] = w;
  }
  for (auto& id : left) {
    if (auto it = by_id_.find(id); it != by_id_.end() && entry_of_[it->second] == nullptr) {
      release(it->first, forget);
    }
  }
}

/// Worker `id` left: it takes its cache with it.
void tenant_map::release(std::string_view id, const forget_fn& forget) {
  auto it = by_id_.find(id);
  auto t = it->second;
  const std::string key = it->first; // the forget callback reads it; the element goes below
  forget(t, key);
  free_.push_back(t);
  by_id_.erase(it);
}

void tenant_map::rebuild(const fleet_snapshot& fleet, protocol::worker_type role,
                         const forget_fn& forget) {
  ++rebuilds_;
  std::unordered_set<std::string_view> present;
  for (auto& w : fleet.workers) {
    if (w->spec.type == role) {
      present.insert(w->id);
    }
  }
  std::vector<std::string> gone;
  for (auto& [id, t] : by_id_) {
    if (!present.count(id)) {
      gone.push_back(id);
    }
  }
  for (auto& id : gone) {
    release(id, forget);
  }
  // Candidates are entries of this snapshot: picks find their tenants by address, and the
  // tree's tenants their workers by number.
  by_entry_.clear();
  entry_of_.assign(entry_of_.size(), nullptr);
  for (auto& w : fleet.workers) {
    if (w->spec.type == role) {
      auto t = number(w->id);
      by_entry_.insert_or_assign(w.get(), t);
      entry_of_[t] = w.get();
    }
  }
}

} // namespace troupe::actors
