#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace troupe::cluster {

/// How often whole registries travel between this node and each member. A whole-registry sync
/// costs the receiver a merge of every record, so neither side lets one member have them more
/// often than `interval`: this node sends at most one per `interval` to a member (a sync due
/// sooner waits), and takes at most one per half `interval` from a member (the slack absorbs
/// jitter; a sync refused is repaired by the next anti-entropy round). Pure bookkeeping, keyed
/// by member name so that a member reconnecting in a loop gains nothing.
class sync_limits {
public:
  using clock = std::chrono::steady_clock;

  explicit sync_limits(std::chrono::milliseconds interval) : interval_(interval) {}

  /// True when a whole registry may go to `member` now.
  bool may_send(const std::string& member, clock::time_point now) const;

  /// One went to `member` now.
  void sent(const std::string& member, clock::time_point now);

  /// When the next one may go to `member`.
  clock::time_point next_send(const std::string& member) const;

  /// A part of whole-registry sync `sync_id` (0: unnumbered) arrived from `member`: true when it
  /// is taken, i.e. it belongs to the sync taken last, or it starts a new one late enough.
  bool accept(const std::string& member, std::uint64_t sync_id, clock::time_point now);

  /// Forgets `member` (it left).
  void forget(const std::string& member);

private:
  struct incoming {
    std::uint64_t sync_id = 0;
    clock::time_point started{};
  };

  std::chrono::milliseconds interval_;
  std::map<std::string, clock::time_point> sent_;
  std::map<std::string, incoming> received_;
};

} // namespace troupe::cluster
