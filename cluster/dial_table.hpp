#pragma once

#include "cluster/address.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace troupe::cluster {

/// The addresses a node dials, and when: its seeds, which it dials for as long as it runs, and
/// the members' addresses it learned by gossip, which are bounded in number and dropped after
/// failing too many dials in a row (an address named in a `hello` is not dialed forever). Pure
/// bookkeeping: the node feeds it the time and the outcome of each dial.
class dial_table {
public:
  using clock = std::chrono::steady_clock;

  struct settings {
    std::chrono::milliseconds reconnect_min{500}; ///< First redial delay; doubles up to max.
    std::chrono::milliseconds reconnect_max{5000};
    unsigned max_failures = 8;    ///< A learned address failing this many dials in a row goes.
    std::size_t max_learned = 64; ///< Learned addresses kept at most (seeds do not count).
  };

  /// One address to dial.
  struct entry {
    endpoint where;
    bool seed = false;
    bool self = false;       ///< It turned out to be this node: never dialed again.
    bool connecting = false; ///< An attempt is in flight.
    clock::time_point next_attempt{};
    std::chrono::milliseconds backoff{0};
    unsigned failures = 0; ///< In a row.
    std::string last_error;
    std::string diagnosis; ///< What a TLS handshake of our own said about the failure.
  };

  /// What `learn` did.
  enum class learned {
    added, ///< A new address to dial.
    known, ///< Already in the table (or this node's own address).
    invalid,
    full, ///< `max_learned` addresses are known already.
  };

  explicit dial_table(settings s) : settings_(s) {}

  /// Adds a seed (dialed forever). Returns false when `address` is not host:port (`why` says).
  bool add_seed(const std::string& address, std::string& why);

  /// Adds an address learned from a member, unless it is `own` (this node's address).
  learned learn(const std::string& address, const std::string& own, std::string& why);

  /// The addresses to dial now (not this node, not connecting, not waiting, not `linked`); each
  /// is marked connecting.
  template <class Linked> std::vector<std::string> due(clock::time_point now, Linked linked) {
    std::vector<std::string> out;
    for (auto& [address, e] : entries_) {
      if (e.self || e.connecting || now < e.next_attempt || linked(address)) {
        continue;
      }
      e.connecting = true;
      out.push_back(address);
    }
    return out;
  }

  /// A dial of `address` reached a peer.
  void succeeded(const std::string& address);

  /// A dial of `address` failed with `error`. Returns true when the address was dropped (a
  /// learned one that failed `max_failures` times in a row).
  bool failed(const std::string& address, std::string error, clock::time_point now);

  /// The link a dial of `address` made was lost: dial again after the backoff.
  void lost(const std::string& address, clock::time_point now);

  /// `address` is this node: never dialed again.
  void mark_self(const std::string& address);

  /// Dial `address` at the next chance (a peer announced it and waits to be verified).
  void hurry(const std::string& address, clock::time_point now);

  /// The entry of `address`, or nullptr.
  entry* find(const std::string& address);

  /// Every address, by text.
  const std::map<std::string, entry>& entries() const { return entries_; }

  /// Learned addresses dropped so far.
  std::uint64_t dropped() const { return dropped_; }

private:
  void schedule_retry(entry& e, clock::time_point now);
  std::size_t learned_count() const;

  settings settings_;
  std::map<std::string, entry> entries_;
  std::uint64_t dropped_ = 0;
};

} // namespace troupe::cluster
