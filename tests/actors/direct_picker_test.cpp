#include "actors/errors.hpp"
#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"
#include "tests/fakes/actor_system.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

using namespace troupe;
using namespace troupe::actors;

namespace {

/// A policy with a direct picker over a fleet view, on a deterministic actor system.
struct direct_picker_fixture : test::actor_system_fixture {
  std::shared_ptr<fleet_view> view = std::make_shared<fleet_view>();
  policy_link link;

  explicit direct_picker_fixture(const std::string& strategy = "round_robin")
      : link(make_policy_link(sys, strategy, protocol::worker_type::regular, {}, view)) {
    keep(link.actor);
  }

  /// Publishes workers `{id, healthy}` serving model `m`, to the view and to the actor (as the
  /// registry does).
  void fleet(std::vector<std::pair<std::string, bool>> workers) {
    auto snap = std::make_shared<fleet_snapshot>();
    for (auto& [id, healthy] : workers) {
      auto w = std::make_shared<worker_entry>();
      w->id = id;
      w->models = {"m"};
      w->live = std::make_shared<worker_live>();
      w->live->health = healthy ? health_state::healthy : health_state::unhealthy;
      snap->workers.push_back(std::move(w));
    }
    snap->index = fleet_index::of(snap->workers);
    fleet_ptr published = std::move(snap);
    view->set(published);
    caf::anon_send(link.actor, publish_atom_v, published);
    run();
  }

  static selection for_model(std::string model = "m") {
    selection sel;
    sel.model = std::move(model);
    return sel;
  }

  static std::string id_or_error(const caf::expected<worker_entry_ptr>& w) {
    return w ? (*w)->id : "error:" + std::string(protocol::to_string(to_api_error(w.error()).code));
  }

  /// The direct picker's answer to `sel` (it must answer).
  std::string by_picker(const selection& sel) {
    auto r = link.picker->pick(sel);
    REQUIRE(r);
    return id_or_error(*r);
  }

  /// The policy actor's answer to `sel`.
  std::string by_actor(const selection& sel) {
    return id_or_error(ask<worker_entry_ptr>(link.actor, select_atom_v, sel));
  }

  nlohmann::json state() {
    auto s = ask<std::string>(link.actor, inspect_atom_v);
    REQUIRE(s);
    return nlohmann::json::parse(*s);
  }
};

} // namespace

TEST_CASE("round robin, random and power of two come with a direct picker; the others do not") {
  const std::set<std::string> concurrent{"round_robin", "random", "power_of_two"};
  for (auto& name : strategy_names()) {
    direct_picker_fixture f{name};
    INFO(name);
    CHECK((f.link.picker != nullptr) == (concurrent.count(name) == 1));
  }
  test::actor_system_fixture plain;
  auto without_view =
      make_policy_link(plain.sys, "round_robin", protocol::worker_type::regular, {}, nullptr);
  plain.keep(without_view.actor);
  CHECK_FALSE(without_view.picker);
}

TEST_CASE("the direct picker and its policy actor share one round-robin cursor and one count") {
  direct_picker_fixture f;
  f.fleet({{"a", true}, {"b", true}, {"c", true}});
  auto sel = direct_picker_fixture::for_model();
  CHECK(f.by_picker(sel) == "a");
  CHECK(f.by_actor(sel) == "b");
  CHECK(f.by_picker(sel) == "c");
  CHECK(f.by_actor(sel) == "a");
  auto st = f.state();
  CHECK(st["picks"] == 4);
  CHECK(st["state"]["cursor"] == 4);
}

TEST_CASE("the direct picker answers as its policy actor does") {
  direct_picker_fixture f;
  f.fleet({{"a", true}, {"b", false}, {"c", true}});
  // An unknown model, and a model whose workers are all excluded or unhealthy.
  CHECK(f.by_picker(direct_picker_fixture::for_model("nope")) == "error:model_not_found");
  CHECK(f.by_actor(direct_picker_fixture::for_model("nope")) == "error:model_not_found");
  auto sel = direct_picker_fixture::for_model();
  sel.exclude = {"a", "c"};
  CHECK(f.by_picker(sel) == "error:no_worker_available");
  CHECK(f.by_actor(sel) == "error:no_worker_available");
  // The unhealthy worker is skipped; a preferred worker is taken when it may take the request.
  sel.exclude = {"a"};
  CHECK(f.by_picker(sel) == "c");
  sel.exclude.clear();
  sel.prefer = "c";
  CHECK(f.by_picker(sel) == "c");
  CHECK(f.by_actor(sel) == "c");
  sel.prefer = "b"; // unhealthy: the strategy picks
  CHECK(f.by_picker(sel) != "b");
  CHECK(f.state()["refused"] == 4);
}

TEST_CASE("a selection naming a target worker goes to the policy actor") {
  direct_picker_fixture f;
  f.fleet({{"a", true}, {"b", true}});
  auto sel = direct_picker_fixture::for_model();
  sel.target = "b";
  CHECK_FALSE(f.link.picker->pick(sel));
  CHECK(f.by_actor(sel) == "b");
}
