#pragma once
// A cluster node on the deterministic scheduler next to a real cache_aware policy keeping a
// shared view of 16-byte blocks over workers w0..w2 (all serving model "m"): what the prefix
// gossip and join snapshot tests share.

#include "actors/policies/prefix_blocks.hpp"
#include "tests/cluster/node_fixture.hpp"
#include "tests/fakes/fake_fleet.hpp"

namespace troupe::test::cluster_node {

/// The chained hashes of `text`'s 16-byte blocks, as the view keeps them.
inline std::vector<std::uint64_t> chain_of(const std::string& text) {
  std::vector<std::uint64_t> c;
  actors::prefix_block_hashes(text, 16, c);
  return c;
}

struct cache_aware_fixture : fixture {
  static constexpr std::uint64_t digest = 777; ///< The fleet snapshot's registry digest.

  actors::policy_actor policy;
  test::fake_fleet workers{3};
  std::shared_ptr<actors::fleet_snapshot> snap;

  /// `placement`: the policy's `--cluster-placement` (docs/cluster.md, "Placement by owner").
  explicit cache_aware_fixture(const std::string& placement = "off") {
    actors::policy_config cfg;
    cfg.prefix_block_bytes = 16;
    cfg.cluster_placement = placement;
    for (auto& w : workers.entries) {
      w->models = {"m"}; // a worker serving nothing is never picked
    }
    policy = keep(actors::make_policy(sys, "cache_aware", protocol::worker_type::regular, cfg));
    snap = std::make_shared<actors::fleet_snapshot>(workers.snapshot());
    snap->digest = digest;
    caf::anon_send(policy, publish_atom_v, actors::fleet_ptr{snap});
    run();
  }

  /// The worker the policy picks for `text`, or "error".
  std::string pick(const std::string& text) {
    // The prompt must outlive the selection: the policy reads it in place.
    auto owned = std::make_shared<std::string>(text);
    actors::selection sel;
    sel.prompt.owner = owned;
    sel.prompt.parts = {*owned, {}};
    auto w = ask<actors::worker_entry_ptr>(policy, select_atom_v, sel);
    return w ? (*w)->id : "error";
  }

  void tick() { advance(std::chrono::milliseconds{100}); }

  /// The policy's state in /admin/actors.
  nlohmann::json inspect_policy() {
    auto s = ask<std::string>(policy, inspect_atom_v);
    return s ? nlohmann::json::parse(*s)["state"] : nlohmann::json{};
  }
};

} // namespace troupe::test::cluster_node
