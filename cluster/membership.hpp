#pragma once

#include "protocol/cluster_wire.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::cluster {

/// What this node believes about a peer.
enum class member_state {
  up,      ///< Linked and heard from recently.
  suspect, ///< Linked, but silent for longer than a few heartbeats: its load is not counted.
  down,    ///< Link closed, silent past the timeout, or left: its contributions are dropped.
};

std::string_view to_string(member_state s) noexcept;

/// One peer as this node knows it.
struct member {
  std::string name;            ///< Node name (unique in the cluster).
  std::string api_address;     ///< As it announced.
  std::string cluster_address; ///< Where to reach its cluster port (for reconnects).
  bool acks = false;           ///< It confirms the writes it receives (its hello said so).
  std::uint64_t incarnation = 0;
  member_state state = member_state::down;
  std::chrono::steady_clock::time_point last_heard{};
  std::chrono::system_clock::time_point since{}; ///< When `state` last changed.
  std::string reason;                            ///< Why it is down.
  std::map<std::string, int> loads;              ///< Its requests in flight per worker id.
  std::uint64_t load_seq = 0;                    ///< Seq of the report `loads` came from.
  std::uint64_t registry_digest = 0;
  std::uint64_t registry_version = 0;
  std::uint64_t shared_version = 0;
  std::uint32_t workers = 0;
};

/// The peers of a node and what they contribute: states, timeouts and the per-(node, worker)
/// load. Pure bookkeeping (no actors, no sockets): the cluster node feeds it what it hears and
/// the time, and acts on what it answers.
class member_table {
public:
  using clock = std::chrono::steady_clock;

  /// When silence changes a member's state.
  struct timing {
    clock::duration suspect_after = std::chrono::seconds{2}; ///< Silence before `suspect`.
    clock::duration down_after = std::chrono::seconds{6};    ///< Silence before `down`.
    clock::duration forget_after = std::chrono::minutes{10}; ///< Down this long: forgotten.
  };

  /// What hearing from a member meant.
  enum class heard_result {
    known,     ///< Nothing new (it was up or suspect, same incarnation).
    joined,    ///< New, or back from down.
    restarted, ///< A new incarnation of a member: the old one's contributions were dropped.
    recovered, ///< A suspect member spoke again: its load counts again.
  };

  explicit member_table(timing t) : timing_(t) {}

  /// A message from `name` (incarnation `inc`) arrived now.
  heard_result heard(const std::string& name, std::uint64_t inc, clock::time_point now,
                     std::chrono::system_clock::time_point wall);

  /// `name` is gone (link closed, left the cluster): its load no longer counts. Returns false
  /// when it was down or unknown already.
  bool down(const std::string& name, std::string reason,
            std::chrono::system_clock::time_point wall);

  /// Takes a load report of `name`; an older report than the last one taken is ignored.
  /// Returns whether the member's loads changed.
  bool report(const std::string& name, const protocol::load_report& r);

  /// Moves silent members to `suspect` and then `down`, and forgets members silent for
  /// `forget_after`. Returns the names whose state changed.
  std::vector<std::string> expire(clock::time_point now,
                                  std::chrono::system_clock::time_point wall);

  /// Requests in flight per worker id, summed over the members that are up (a suspect
  /// member's load counts again once it is heard from).
  std::unordered_map<std::string, int> remote_loads() const;

  /// The member called `name`, or nullptr.
  member* find(const std::string& name);

  /// Every member, by name.
  const std::map<std::string, member>& members() const { return members_; }

  /// Members by state: up, suspect, down.
  std::size_t count(member_state s) const;

private:
  timing timing_;
  std::map<std::string, member> members_;
};

} // namespace troupe::cluster
