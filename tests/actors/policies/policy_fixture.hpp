#pragma once

// A policy actor of one strategy on the deterministic actor system: the test publishes fleets,
// selects, and moves the clock the strategy reads (tests/fakes/actor_system.hpp).

#include "actors/errors.hpp"
#include "actors/policy.hpp"
#include "tests/fakes/actor_system.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <caf/send.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace troupe::test {

struct policy_fixture : actor_system_fixture {
  explicit policy_fixture(const std::string& strategy, actors::policy_config cfg = {},
                          int workers = 3)
      : fleet(workers),
        policy(keep(actors::make_policy(sys, strategy, protocol::worker_type::regular, cfg))) {
    publish();
  }

  /// Sends the fleet as it is now (every worker serving model `m`).
  void publish() {
    for (auto& w : fleet.entries) {
      w->models = {"m"};
    }
    auto snap = std::make_shared<actors::fleet_snapshot>(fleet.snapshot());
    caf::anon_send(policy, publish_atom_v, actors::fleet_ptr{std::move(snap)});
    run();
  }

  /// The id picked for `sel` (for model `m`), or "error:<code>".
  std::string pick(actors::selection sel) {
    sel.model = "m";
    auto w = ask<actors::worker_entry_ptr>(policy, select_atom_v, sel);
    if (w) {
      return (*w)->id;
    }
    auto e = actors::to_api_error(w.error());
    last_error = e.message;
    return "error:" + std::string(protocol::to_string(e.code));
  }

  /// The id picked for a request with routing key `key`.
  std::string pick_key(const std::string& key) {
    actors::selection sel;
    sel.routing_key = key;
    return pick(sel);
  }

  /// The id picked for a request whose prompt is `text`.
  std::string pick_prompt(std::string_view text) {
    actors::selection sel;
    sel.prompt.parts = {text, {}};
    return pick(sel);
  }

  /// The policy's state (`/admin/actors/{id}`), the strategy's part.
  nlohmann::json state() {
    auto s = ask<std::string>(policy, inspect_atom_v);
    return nlohmann::json::parse(*s)["state"];
  }

  std::string last_error; ///< The message of the last selection that failed.
  fake_fleet fleet;
  actors::policy_actor policy;
};

} // namespace troupe::test
