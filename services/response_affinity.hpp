#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::services {

/// Which worker stores which Responses API object. A worker keeps the responses it created, so
/// `GET/DELETE /v1/responses/{id}`, `.../cancel`, `.../input_items` and a create continuing
/// `previous_response_id` must reach that worker. Bounded: the oldest ids are forgotten first,
/// and (with a TTL) ids older than it (their requests then go wherever the policy sends them,
/// after a search: actors/request/response_locate.cpp). Thread-safe: response sinks write it
/// from exchange strands, request actors read it, the cluster node drains its outbox.
///
/// Shared across cluster nodes (docs/cluster.md, "Responses affinity"): with `share_with_peers`
/// on, each id this node learns itself also goes into a bounded outbox the cluster node drains
/// every gossip tick and sends to its members; what members send is remembered with
/// `remember_remote`, which never queues it again (no echo between nodes).
class response_affinity {
public:
  using clock = std::chrono::steady_clock;

  /// A map remembering at most `capacity` ids, each for `ttl` at most (zero: no expiry).
  explicit response_affinity(std::size_t capacity = 100000,
                             std::chrono::seconds ttl = std::chrono::seconds{0})
      : capacity_(capacity), ttl_(ttl) {}

  /// Remembers that `worker_id` stores response `response_id` (learned by this node: queued
  /// for the peers when sharing is on).
  void remember(std::string response_id, std::string worker_id);

  /// Remembers what a peer said: never queued for the peers again.
  void remember_remote(std::string response_id, std::string worker_id);

  /// The worker storing `response_id`, if known (and not expired).
  std::optional<std::string> worker_of(std::string_view response_id) const;

  /// Ids remembered (expired ones included until they are swept).
  std::size_t size() const;

  /// Starts queueing the ids `remember` learns, at most `outbox_capacity` waiting (beyond: the
  /// oldest waiting are dropped and counted).
  void share_with_peers(std::size_t outbox_capacity);

  /// Empties the outbox (nobody reads it now: a member linking later is told these in its
  /// snapshot instead); returns how many it held. Not counted as dropped.
  std::size_t clear_outbox();

  /// Takes up to `max` queued (response id, worker id) pairs, oldest first.
  std::vector<std::pair<std::string, std::string>> take_outbox(std::size_t max);

  /// The newest `max` ids remembered (this node's and its peers', not expired) and their
  /// workers, oldest first: what a member that just linked is told (docs/cluster.md, "A node
  /// that joins late"). The outbox is left as it is.
  std::vector<std::pair<std::string, std::string>> snapshot(std::size_t max) const;

  /// Counts for metrics and /admin/actors.
  struct counts {
    std::size_t held = 0;             ///< Ids remembered.
    std::size_t queued = 0;           ///< Ids waiting in the outbox.
    std::uint64_t shared = 0;         ///< Ids taken from the outbox (for the peers).
    std::uint64_t from_peers = 0;     ///< Ids remembered from peers.
    std::uint64_t outbox_dropped = 0; ///< Ids dropped from a full outbox.
    std::uint64_t expired = 0;        ///< Ids forgotten for their age.
  };
  counts stats() const;

  /// Overrides the clock (tests).
  void set_clock(std::function<clock::time_point()> now) { now_ = std::move(now); }

private:
  void put(std::string response_id, std::string worker_id, bool local);
  void sweep(clock::time_point now); ///< Forgets expired ids (oldest first). Under `mx_`.

  struct entry {
    std::string worker;
    clock::time_point at;
  };
  std::size_t capacity_;
  std::chrono::seconds ttl_;
  std::function<clock::time_point()> now_ = [] { return clock::now(); };
  mutable std::mutex mx_;
  std::unordered_map<std::string, entry> workers_;
  std::deque<std::pair<std::string, clock::time_point>> order_; ///< Insertion order, for eviction.
  bool sharing_ = false;
  std::size_t outbox_capacity_ = 0;
  std::deque<std::pair<std::string, std::string>> outbox_;
  std::uint64_t shared_ = 0;
  std::uint64_t from_peers_ = 0;
  std::uint64_t outbox_dropped_ = 0;
  std::uint64_t expired_ = 0;
};

/// The id of the response a Responses create answered: the `id` of a non-streamed body, or of
/// the `response` in a `response.created` event. Empty when `piece` carries none.
std::string created_response_id(std::string_view piece);

/// An observer of the response to a Responses create served by `worker_id` (for the relay
/// sink, which shows it each body or event): remembers the id it answers.
std::function<void(std::string_view piece)>
remember_response_id(std::shared_ptr<response_affinity> affinity, std::string worker_id);

} // namespace troupe::services
