// The shared Responses affinity between cluster nodes (cluster/response_gossip.cpp) on the
// deterministic scheduler: one node, fake peers recording what they receive.

#include "tests/cluster/node_fixture.hpp"
#include "tests/fakes/fake_fleet.hpp"

using namespace troupe::test::cluster_node;

namespace {

using id_pairs = std::vector<std::pair<std::string, std::string>>;

/// The (response id, worker) pairs of the response updates `p` received, in order.
id_pairs responses(const fake_peer& p) {
  id_pairs out;
  for (auto& u : p.got->of<protocol::response_update>()) {
    out.insert(out.end(), u.responses.begin(), u.responses.end());
  }
  return out;
}

/// Node "a" serving workers w0..w2, its Responses affinity shared.
struct response_fixture : fixture {
  std::shared_ptr<services::response_affinity> affinity =
      std::make_shared<services::response_affinity>(100);
  test::fake_fleet workers{3};

  response_fixture() {
    affinity->share_with_peers(100);
    node_deps deps{registry, view, nullptr, dialer, refusals, {}, {}, affinity};
    start(settings(), std::move(deps));
    caf::anon_send(node.node, publish_atom_v,
                   actors::fleet_ptr{std::make_shared<actors::fleet_snapshot>(workers.snapshot())});
    run();
  }

  /// A member whose hello says it reads response updates (`reads`), or an older one.
  fake_peer member(const std::string& name, bool reads) {
    return greeted_peer(name, [reads](auto& h) { h.responses = reads; });
  }

  void tick() { advance(100ms); }

  json status() {
    auto s = ask<std::string>(node.node, inspect_atom_v);
    return s ? json::parse(*s)["response_affinity"] : json{};
  }
};

} // namespace

TEST_CASE_METHOD(response_fixture, "ids this node learns reach the members that read them, once") {
  auto b = member("b", true);
  auto old = member("old", false);
  affinity->remember("resp_1", "w0");
  affinity->remember("resp_2", "w2");
  tick();
  CHECK(responses(b) == id_pairs{{"resp_1", "w0"}, {"resp_2", "w2"}});
  CHECK(responses(old).empty());
  tick(); // nothing new, nothing sent
  CHECK(responses(b).size() == 2);
  auto st = status();
  CHECK(st["ids_sent"] == 2);
  CHECK(st["updates_sent"] == 1);
  CHECK(st["members"] == json::array({"b"}));
  // The hello this node sends says it reads them.
  bool says = false;
  for (auto& m : b.got->messages) {
    if (auto* h = std::get_if<protocol::cluster_hello>(&m.body)) {
      says = h->responses;
    }
  }
  CHECK(says);
}

TEST_CASE_METHOD(response_fixture,
                 "ids from a member are remembered for the workers this node serves, "
                 "and never sent on") {
  auto b = member("b", true);
  auto c = member("c", true);
  cluster_message m;
  m.body = protocol::response_update{{{"resp_b", "w1"}, {"resp_elsewhere", "w-not-here"}}, false};
  say(b, "b", std::move(m));
  CHECK(affinity->worker_of("resp_b") == "w1");
  CHECK_FALSE(affinity->worker_of("resp_elsewhere"));
  tick();
  CHECK(responses(c).empty()); // no echo: b told every member itself
  CHECK(responses(b).empty());
  auto st = status();
  CHECK(st["ids_received"] == 1);
  CHECK(st["unknown_worker"] == 1);
  CHECK(st["from_peers"] == 1);
}

TEST_CASE_METHOD(response_fixture, "ids learned while no member reads them reach a later "
                                   "member in its snapshot, once") {
  affinity->remember("resp_1", "w0");
  tick();
  CHECK(status()["outbox"] == 0);
  CHECK(status()["left_for_snapshots"] == 1);
  auto b = member("b", true);
  tick();
  CHECK(responses(b).empty());
  load(b, "b", 1, {}, 0); // its registry is ours (the fake fleet's digest)
  tick();
  auto got = received<protocol::response_update>(b);
  REQUIRE(got.size() == 1);
  CHECK(got[0].snapshot);
  CHECK(responses(b) == id_pairs{{"resp_1", "w0"}});
}
