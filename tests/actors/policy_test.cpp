#include "actors/errors.hpp"
#include "actors/policy.hpp"
#include "tests/fakes/actor_system.hpp"

#include <catch2/catch.hpp>
#include <map>

using namespace troupe;
using namespace troupe::actors;
using protocol::provider_kind;

namespace {

/// One regular policy on a deterministic actor system.
struct policy_actor_fixture : test::actor_system_fixture {
  policy_actor policy = keep(make_policy(sys, "round_robin", protocol::worker_type::regular));

  /// Publishes a fleet of workers `{id, provider, healthy}` all serving model `m`.
  void fleet(std::vector<std::tuple<std::string, provider_kind, bool>> workers) {
    auto snap = std::make_shared<fleet_snapshot>();
    for (auto& [id, provider, healthy] : workers) {
      auto w = std::make_shared<worker_entry>();
      w->id = id;
      w->spec.provider = provider;
      w->models = {"m"};
      w->live = std::make_shared<worker_live>();
      w->live->health = healthy ? health_state::healthy : health_state::unhealthy;
      snap->workers.push_back(std::move(w));
    }
    snap->index = fleet_index::of(snap->workers);
    caf::anon_send(policy, publish_atom_v, fleet_ptr{std::move(snap)});
    run();
  }

  /// The ids picked by `n` selections for a request of `provider`'s API, or "error:<code>".
  std::map<std::string, int> picks(provider_kind provider, int n, std::string prefer = {}) {
    std::map<std::string, int> out;
    for (int i = 0; i < n; ++i) {
      selection sel;
      sel.model = "m";
      sel.provider = provider;
      sel.prefer = prefer;
      auto w = ask<worker_entry_ptr>(policy, select_atom_v, sel);
      ++out[w ? (*w)->id
              : "error:" + std::string(protocol::to_string(to_api_error(w.error()).code))];
    }
    return out;
  }
};

} // namespace

TEST_CASE("workers of a single provider take any API") {
  policy_actor_fixture f;
  f.fleet({{"a1", provider_kind::anthropic, true}, {"a2", provider_kind::anthropic, true}});
  CHECK(f.picks(provider_kind::openai, 4) == std::map<std::string, int>{{"a1", 2}, {"a2", 2}});
}

TEST_CASE("with several providers, only the request's provider is eligible") {
  policy_actor_fixture f;
  f.fleet({{"a", provider_kind::anthropic, true},
           {"o", provider_kind::openai, true},
           {"s", provider_kind::none, true}});
  CHECK(f.picks(provider_kind::anthropic, 3) == std::map<std::string, int>{{"a", 3}});
  CHECK(f.picks(provider_kind::openai, 3) == std::map<std::string, int>{{"o", 3}});
  CHECK(f.picks(provider_kind::none, 3) == std::map<std::string, int>{{"s", 3}});
}

TEST_CASE("a provider the model lacks falls back to its self-hosted workers, never another") {
  policy_actor_fixture f;
  f.fleet({{"o", provider_kind::openai, true}, {"s", provider_kind::none, true}});
  CHECK(f.picks(provider_kind::anthropic, 2) == std::map<std::string, int>{{"s", 2}});
  policy_actor_fixture g;
  g.fleet({{"o", provider_kind::openai, true}, {"a", provider_kind::anthropic, true}});
  CHECK(g.picks(provider_kind::none, 1) ==
        std::map<std::string, int>{{"error:no_worker_available", 1}});
}

TEST_CASE("a provider that is down does not hand its requests to another") {
  policy_actor_fixture f;
  f.fleet({{"a", provider_kind::anthropic, false}, {"o", provider_kind::openai, true}});
  CHECK(f.picks(provider_kind::anthropic, 2) ==
        std::map<std::string, int>{{"error:no_worker_available", 2}});
}

TEST_CASE("a preferred worker is picked when it is eligible") {
  policy_actor_fixture f;
  f.fleet({{"s1", provider_kind::none, true},
           {"s2", provider_kind::none, true},
           {"s3", provider_kind::none, false}});
  CHECK(f.picks(provider_kind::openai, 3, "s2") == std::map<std::string, int>{{"s2", 3}});
  // Not routable: the strategy decides.
  CHECK(f.picks(provider_kind::openai, 2, "s3") ==
        std::map<std::string, int>{{"s1", 1}, {"s2", 1}});
}
