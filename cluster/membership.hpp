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
  bool deltas = false;                           ///< It reads load deltas (its hello said so).
  bool needs_full = false; ///< A delta of it did not follow the last report: a whole one is due.
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

  /// Takes a load report of `name`: a whole one replaces its loads (an older one than the last
  /// taken is ignored), a delta changes the workers it names when it follows the last report
  /// taken (else the member `needs_full`, and its deltas are ignored until a whole report).
  /// Only the workers named are touched. Returns whether the member's loads changed.
  bool report(const std::string& name, const protocol::load_report& r);

  /// Moves silent members to `suspect` and then `down`, and forgets members silent for
  /// `forget_after`. Returns the names whose state changed.
  std::vector<std::string> expire(clock::time_point now,
                                  std::chrono::system_clock::time_point wall);

  /// Requests in flight per worker id, summed over the members that are up (a suspect
  /// member's load counts again once it is heard from). Kept as reports arrive: reading it
  /// costs nothing.
  const std::unordered_map<std::string, int>& remote_loads() const { return sums_; }

  /// The worker ids whose sum changed since the last call (then forgotten).
  std::vector<std::string> take_changed();

  /// The member called `name`, or nullptr.
  member* find(const std::string& name);

  /// Every member, by name.
  const std::map<std::string, member>& members() const { return members_; }

  /// Members by state: up, suspect, down.
  std::size_t count(member_state s) const;

private:
  /// Adds (`sign` 1) or removes (-1) what `m` contributes to the sums.
  void count(const member& m, int sign);
  /// Worker `id` of member `m` (up when `counted`) goes from `from` to `to` requests.
  void change(member& m, const std::string& id, int to, bool counted);

  timing timing_;
  std::map<std::string, member> members_;
  std::unordered_map<std::string, int> sums_; ///< Over members up.
  std::vector<std::string> changed_;
};

} // namespace troupe::cluster
