#include "actors/policies/prefix_index.hpp"

#include <algorithm>

namespace troupe::actors {

prefix_index::prefix_index(limits lim) : lim_(lim) {
  lim_.per_tenant = std::max<std::size_t>(lim_.per_tenant, 1);
  lim_.total = std::max<std::size_t>(lim_.total, 1);
}

prefix_index::lru& prefix_index::list_of(tenant t) {
  if (t >= tenants_.size()) {
    tenants_.resize(t + 1);
  }
  return tenants_[t];
}

std::uint32_t prefix_index::find(std::uint64_t hash, tenant t) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) {
    return nil;
  }
  for (auto m = it->second; m != nil; m = marks_[m].same) {
    if (marks_[m].owner == t) {
      return m;
    }
  }
  return nil;
}

void prefix_index::link_front(std::uint32_t m) {
  auto& mk = marks_[m];
  auto& own = list_of(mk.owner);
  mk.prev = nil;
  mk.next = own.head;
  if (own.head != nil) {
    marks_[own.head].prev = m;
  } else {
    own.tail = m;
  }
  own.head = m;
  ++own.count;
  mk.gprev = nil;
  mk.gnext = all_.head;
  if (all_.head != nil) {
    marks_[all_.head].gprev = m;
  } else {
    all_.tail = m;
  }
  all_.head = m;
  ++all_.count;
}

void prefix_index::unlink(std::uint32_t m) {
  auto& mk = marks_[m];
  auto& own = tenants_[mk.owner];
  (mk.prev != nil ? marks_[mk.prev].next : own.head) = mk.next;
  (mk.next != nil ? marks_[mk.next].prev : own.tail) = mk.prev;
  --own.count;
  (mk.gprev != nil ? marks_[mk.gprev].gnext : all_.head) = mk.gnext;
  (mk.gnext != nil ? marks_[mk.gnext].gprev : all_.tail) = mk.gprev;
  --all_.count;
}

void prefix_index::drop(std::uint32_t m) {
  unlink(m);
  auto it = by_hash_.find(marks_[m].hash);
  if (it->second == m) {
    if (marks_[m].same == nil) {
      by_hash_.erase(it);
    } else {
      it->second = marks_[m].same;
    }
  } else {
    auto p = it->second;
    while (marks_[p].same != m) {
      p = marks_[p].same;
    }
    marks_[p].same = marks_[m].same;
  }
  free_.push_back(m);
}

bool prefix_index::touch(tenant t, std::uint64_t hash) {
  if (auto m = find(hash, t); m != nil) {
    unlink(m);
    link_front(m);
    return false;
  }
  std::uint32_t m;
  if (!free_.empty()) {
    m = free_.back();
    free_.pop_back();
  } else {
    m = static_cast<std::uint32_t>(marks_.size());
    marks_.emplace_back();
  }
  marks_[m] = mark{};
  marks_[m].hash = hash;
  marks_[m].owner = t;
  auto [it, fresh] = by_hash_.try_emplace(hash, m);
  if (!fresh) {
    marks_[m].same = it->second;
    it->second = m;
  }
  link_front(m);
  while (tenants_[t].count > lim_.per_tenant) {
    drop(tenants_[t].tail);
    ++evicted_;
  }
  while (all_.count > lim_.total) {
    drop(all_.tail);
    ++evicted_;
  }
  return true;
}

std::size_t prefix_index::match_each(const std::vector<std::uint64_t>& chain,
                                     const std::vector<char>& eligible,
                                     std::vector<std::size_t>& blocks) {
  blocks.assign(eligible.size(), 0);
  return match_each(
      chain, [&](tenant t) { return t < eligible.size() && eligible[t]; },
      [&](tenant t, std::size_t n) { blocks[t] = n; });
}

std::size_t prefix_index::match_each(const std::vector<std::uint64_t>& chain,
                                     const std::function<bool(tenant)>& eligible,
                                     const std::function<void(tenant, std::size_t)>& held) {
  if (chain.empty()) {
    return 0;
  }
  auto first = by_hash_.find(chain[0]);
  if (first == by_hash_.end()) {
    return 0;
  }
  // reach_[t]: the blocks `t` holds from the chain's start on, while it keeps up (nil for the
  // tenants not met: all of them between calls). Only the holders of the first block are met.
  if (reach_.size() < tenants_.size()) {
    reach_.resize(tenants_.size(), nil);
  }
  met_.clear();
  for (auto m = first->second; m != nil; m = marks_[m].same) {
    auto t = marks_[m].owner;
    if (eligible(t)) {
      reach_[t] = 1;
      met_.push_back(t);
    }
  }
  for (std::uint32_t depth = 1; depth < chain.size() && !met_.empty(); ++depth) {
    auto it = by_hash_.find(chain[depth]);
    if (it == by_hash_.end()) {
      break;
    }
    bool any = false;
    for (auto m = it->second; m != nil; m = marks_[m].same) {
      auto& r = reach_[marks_[m].owner];
      if (r == depth) {
        r = depth + 1;
        any = true;
      }
    }
    if (!any) {
      break;
    }
  }
  std::size_t best = 0;
  for (auto t : met_) {
    best = std::max<std::size_t>(best, reach_[t]);
    held(t, reach_[t]);
    reach_[t] = nil;
  }
  return best;
}

std::size_t prefix_index::match(const std::vector<std::uint64_t>& chain,
                                const std::function<bool(tenant)>& eligible,
                                std::vector<tenant>& holders, std::size_t max_holders) {
  holders.clear();
  std::size_t best = 0;
  match_each(chain, eligible, [&](tenant t, std::size_t n) {
    if (n > best) {
      best = n;
      holders.clear();
    }
    if (n == best && holders.size() < max_holders) {
      holders.push_back(t);
    }
  });
  return best;
}

bool prefix_index::holds(tenant t, std::uint64_t hash) const {
  return find(hash, t) != nil;
}

void prefix_index::remove(tenant t) {
  if (t >= tenants_.size()) {
    return;
  }
  while (tenants_[t].head != nil) {
    drop(tenants_[t].head);
  }
}

std::size_t prefix_index::blocks(tenant t) const noexcept {
  return t < tenants_.size() ? tenants_[t].count : 0;
}

} // namespace troupe::actors
