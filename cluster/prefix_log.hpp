#pragma once

// What this node's own cache-aware picks placed recently: the (policy role, worker, block hash)
// triples the node took from its policies, in least-recently-used order and bounded. A member
// that links later is sent them as a snapshot (cluster/join_snapshot.cpp), so it knows where
// this node's prompts went without waiting for them to come again. Only this node's picks are
// logged, never what members sent: each node tells a newcomer its own, and nothing is told
// twice. Internal to cluster/; single-threaded (the node actor owns it).

#include "protocol/cluster_wire.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe::cluster {

class prefix_log {
public:
  /// At most `capacity` triples (0: none kept).
  explicit prefix_log(std::size_t capacity = 0) : capacity_(capacity) {}

  /// The picks of policy `role` recorded `u` (a drain): each of its (worker, hash) pairs
  /// becomes the most recently used, in the order `u` holds them; beyond the capacity the
  /// least recently used go.
  void add(const std::string& role, const protocol::prefix_update& u);

  /// The newest `max` triples for which `keep(worker)` holds, oldest first, as one update per
  /// role (workers in runs, so that a receiver touching them in order ends with the same
  /// recency); `block_bytes` on each.
  std::vector<protocol::prefix_update>
  snapshot(std::size_t max, std::uint32_t block_bytes,
           const std::function<bool(const std::string&)>& keep) const;

  std::size_t size() const noexcept { return entries_.size(); }
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t evicted() const noexcept { return evicted_; }

private:
  struct entry {
    std::uint32_t role;
    std::uint32_t worker;
    std::uint64_t hash;
  };
  struct key {
    std::uint32_t role, worker;
    std::uint64_t hash;
    bool operator==(const key&) const = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return k.hash ^ (0x9e3779b97f4a7c15ull * ((std::uint64_t{k.role} << 32) | k.worker) + 1);
    }
  };
  std::uint32_t role_number(const std::string& role);
  std::uint32_t worker_number(const std::string& name); ///< Taken for an entry to be added.
  void release(std::uint32_t worker);

  std::size_t capacity_;
  std::list<entry> entries_; ///< Most recently used first.
  std::unordered_map<key, std::list<entry>::iterator, key_hash> by_key_;
  std::vector<std::string> roles_;
  std::vector<std::string> workers_;      ///< By number; "" for a free number.
  std::vector<std::size_t> worker_count_; ///< Entries naming each worker.
  std::vector<std::uint32_t> free_workers_;
  std::unordered_map<std::string, std::uint32_t> worker_ids_;
  std::uint64_t evicted_ = 0;
};

} // namespace troupe::cluster
