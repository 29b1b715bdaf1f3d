#include "cluster/prefix_log.hpp"

#include <algorithm>
#include <map>

namespace troupe::cluster {

std::uint32_t prefix_log::role_number(const std::string& role) {
  auto it = std::find(roles_.begin(), roles_.end(), role);
  if (it != roles_.end()) {
    return static_cast<std::uint32_t>(it - roles_.begin());
  }
  roles_.push_back(role); // three at most: regular, prefill, decode
  return static_cast<std::uint32_t>(roles_.size() - 1);
}

std::uint32_t prefix_log::worker_number(const std::string& name) {
  if (auto it = worker_ids_.find(name); it != worker_ids_.end()) {
    return it->second;
  }
  std::uint32_t n;
  if (!free_workers_.empty()) {
    n = free_workers_.back();
    free_workers_.pop_back();
    workers_[n] = name;
    worker_count_[n] = 0;
  } else {
    n = static_cast<std::uint32_t>(workers_.size());
    workers_.push_back(name);
    worker_count_.push_back(0);
  }
  worker_ids_.emplace(name, n);
  return n;
}

void prefix_log::release(std::uint32_t worker) {
  if (--worker_count_[worker] == 0) {
    worker_ids_.erase(workers_[worker]);
    workers_[worker].clear();
    free_workers_.push_back(worker);
  }
}

void prefix_log::add(const std::string& role, const protocol::prefix_update& u) {
  if (capacity_ == 0) {
    return;
  }
  auto r = role_number(role);
  for (auto& w : u.workers) {
    if (w.hashes.empty()) {
      continue;
    }
    auto id = worker_number(w.worker);
    for (auto h : w.hashes) {
      key k{r, id, h};
      if (auto it = by_key_.find(k); it != by_key_.end()) {
        entries_.splice(entries_.begin(), entries_, it->second);
        continue;
      }
      entries_.push_front(entry{r, id, h});
      by_key_.emplace(k, entries_.begin());
      ++worker_count_[id];
      if (entries_.size() > capacity_) {
        // The least recently used: never the entry just added, so `id` stays this worker's.
        auto& old = entries_.back();
        by_key_.erase(key{old.role, old.worker, old.hash});
        auto gone = old.worker;
        entries_.pop_back();
        release(gone);
        ++evicted_;
      }
    }
  }
}

std::vector<protocol::prefix_update>
prefix_log::snapshot(std::size_t max, std::uint32_t block_bytes,
                     const std::function<bool(const std::string&)>& keep) const {
  std::vector<const entry*> picked;
  std::vector<char> kept(workers_.size(), 0); // 0: not asked, 1: kept, 2: left out
  for (auto it = entries_.begin(); it != entries_.end() && picked.size() < max; ++it) {
    auto& k = kept[it->worker];
    if (k == 0) {
      k = keep(workers_[it->worker]) ? 1 : 2;
    }
    if (k == 1) {
      picked.push_back(&*it);
    }
  }
  std::map<std::uint32_t, protocol::prefix_update> by_role;
  // Oldest first: a receiver touching them in this order ends with this node's recency.
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    auto& e = **it;
    auto& u = by_role[e.role];
    if (u.workers.empty() || u.workers.back().worker != workers_[e.worker]) {
      u.workers.push_back({workers_[e.worker], {}});
    }
    u.workers.back().hashes.push_back(e.hash);
  }
  std::vector<protocol::prefix_update> out;
  for (auto& [r, u] : by_role) {
    u.block_bytes = block_bytes;
    u.role = roles_[r];
    u.snapshot = true;
    out.push_back(std::move(u));
  }
  return out;
}

} // namespace troupe::cluster
