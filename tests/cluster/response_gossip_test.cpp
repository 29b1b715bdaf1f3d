// The shared Responses affinity between cluster nodes (cluster/response_gossip.cpp) on the
// deterministic scheduler: one node, fake peers recording what they receive.

#include "cluster/node.hpp"
#include "tests/fakes/actor_system.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::cluster;
using namespace std::chrono_literals;
using protocol::cluster_message;
using json = nlohmann::json;

namespace {

using id_pairs = std::vector<std::pair<std::string, std::string>>;

struct inbox {
  std::vector<cluster_message> messages;

  id_pairs responses() const {
    id_pairs out;
    for (auto& m : messages) {
      if (auto* u = std::get_if<protocol::response_update>(&m.body)) {
        out.insert(out.end(), u->responses.begin(), u->responses.end());
      }
    }
    return out;
  }
};

struct fake_peer {
  peer_actor actor;
  std::shared_ptr<inbox> got;
};

/// Node "a" serving workers w0..w2, its Responses affinity shared.
struct fixture : test::actor_system_fixture {
  boost::asio::io_context ioc; // never run
  std::shared_ptr<actors::fleet_view> fleet = std::make_shared<actors::fleet_view>();
  std::shared_ptr<services::cluster_view> view = std::make_shared<services::cluster_view>();
  std::shared_ptr<services::response_affinity> affinity =
      std::make_shared<services::response_affinity>(100);
  actors::registry_actor registry;
  test::fake_fleet workers{3};
  node_handles node;
  int next_node = 1;

  fixture() {
    registry = actors::make_registry(sys, ioc, fleet, {}, actors::worker_proxy_config{}, {}, "a");
    affinity->share_with_peers(100);
    node_config c;
    c.name = "a";
    c.api_address = "10.0.0.1:30000";
    c.cluster_address = "10.0.0.1:7000";
    c.networked = true;
    node_deps deps{registry, view, nullptr, {}, std::make_shared<refusal_counts>(),
                   {},       {},   affinity};
    node = make_node(sys, std::move(c), std::move(deps));
    run();
    caf::anon_send(node.node, publish_atom_v,
                   actors::fleet_ptr{std::make_shared<actors::fleet_snapshot>(workers.snapshot())});
    run();
  }

  ~fixture() {
    caf::anon_send(node.node, stop_atom_v);
    caf::anon_send(registry, stop_atom_v);
    run();
  }

  fake_peer peer() {
    fake_peer p;
    p.got = std::make_shared<inbox>();
    auto got = p.got;
    p.actor = keep(sys.spawn([got](peer_actor::pointer) -> peer_actor::behavior_type {
      return {[got](gossip_atom, std::string& bytes) {
        std::string why;
        if (auto m = protocol::decode_message(bytes, why)) {
          got->messages.push_back(std::move(*m));
        }
      }};
    }));
    return p;
  }

  void say(const fake_peer& p, const std::string& from, cluster_message m) {
    m.from = from;
    m.incarnation = 42;
    caf::send_as(p.actor, node.endpoint, gossip_atom_v, protocol::encode(m));
    run();
  }

  /// A member whose hello says it reads response updates (`reads`), or an older one.
  fake_peer member(const std::string& name, bool reads) {
    auto p = peer();
    cluster_message m;
    protocol::cluster_hello h{"api:" + name, "10.0.0.9:" + std::to_string(7000 + next_node++), {}};
    h.responses = reads;
    m.body = h;
    say(p, name, std::move(m));
    return p;
  }

  void tick() { advance(100ms); }

  json status() {
    auto s = ask<std::string>(node.node, inspect_atom_v);
    return s ? json::parse(*s)["response_affinity"] : json{};
  }
};

} // namespace

TEST_CASE_METHOD(fixture, "ids this node learns reach the members that read them, once") {
  auto b = member("b", true);
  auto old = member("old", false);
  affinity->remember("resp_1", "w0");
  affinity->remember("resp_2", "w2");
  tick();
  CHECK(b.got->responses() == id_pairs{{"resp_1", "w0"}, {"resp_2", "w2"}});
  CHECK(old.got->responses().empty());
  tick(); // nothing new, nothing sent
  CHECK(b.got->responses().size() == 2);
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

TEST_CASE_METHOD(fixture, "ids from a member are remembered for the workers this node serves, "
                          "and never sent on") {
  auto b = member("b", true);
  auto c = member("c", true);
  cluster_message m;
  m.body = protocol::response_update{{{"resp_b", "w1"}, {"resp_elsewhere", "w-not-here"}}, false};
  say(b, "b", std::move(m));
  CHECK(affinity->worker_of("resp_b") == "w1");
  CHECK_FALSE(affinity->worker_of("resp_elsewhere"));
  tick();
  CHECK(c.got->responses().empty()); // no echo: b told every member itself
  CHECK(b.got->responses().empty());
  auto st = status();
  CHECK(st["ids_received"] == 1);
  CHECK(st["unknown_worker"] == 1);
  CHECK(st["from_peers"] == 1);
}

TEST_CASE_METHOD(fixture, "ids learned while no member reads them reach a later member in its "
                          "snapshot, once") {
  affinity->remember("resp_1", "w0");
  tick();
  CHECK(status()["outbox"] == 0);
  CHECK(status()["left_for_snapshots"] == 1);
  auto b = member("b", true);
  tick();
  CHECK(b.got->responses().empty());
  cluster_message report;
  report.body = protocol::load_report{1, {}, 0, 0, 0, 0, true, {}}; // its registry is ours
  say(b, "b", std::move(report));
  tick();
  REQUIRE(b.got->messages.size() > 0);
  bool snapshot = false;
  for (auto& m : b.got->messages) {
    if (auto* u = std::get_if<protocol::response_update>(&m.body)) {
      snapshot = u->snapshot;
    }
  }
  CHECK(snapshot);
  CHECK(b.got->responses() == id_pairs{{"resp_1", "w0"}});
}
