#pragma once

// Who places a prompt in a cluster (docs/cluster.md, "Placement by owner"): of the nodes that
// answer placement asks, the one a rendezvous hash of the prompt's rank seed names. Every node
// that knows the same members names the same owner, and a node joining or leaving moves only
// the prefix groups it owns (or comes to own).

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::actors {

/// The owners of prefix groups as one node sees them: itself and the members that answer asks.
class placement_owners {
public:
  placement_owners() = default;

  /// This node is `self`; `members` are the others that answer (order does not matter).
  placement_owners(std::string self, const std::vector<std::string>& members);

  /// The owner of the prefix group of rank seed `head`: `self()` or a member's name.
  const std::string& owner(std::uint64_t head) const noexcept;

  /// The one node that places every new prefix group (`--cluster-placement first`): deciding
  /// them one after another, it spreads them over the workers as a single node would, where
  /// each group's own owner, deciding at the same moment, could stack two on one worker.
  const std::string& placer() const noexcept { return owner(placer_seed); }

  const std::string& self() const noexcept { return self_; }

  /// No member answers: every pick is this node's own.
  bool alone() const noexcept { return nodes_.size() <= 1; }

  /// Nodes taking part, this one included.
  std::size_t size() const noexcept { return nodes_.size(); }

private:
  /// The seed naming the placer (any constant: the same on every node).
  static constexpr std::uint64_t placer_seed = 0x7472'6f75'7065'0001ull;
  struct node {
    std::uint64_t hash; ///< Of the name: mixed with a prompt's seed per pick.
    std::string name;
  };
  std::string self_;
  std::vector<node> nodes_;
};

} // namespace troupe::actors
