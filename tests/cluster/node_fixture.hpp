#pragma once

// The fixture of the cluster node's tests: one node ("a" at 10.0.0.1:7000) with a real
// registry, a fake dialer and fake peers, on the deterministic scheduler.

#include "cluster/node.hpp"
#include "tests/fakes/actor_system.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

using namespace troupe;
using namespace troupe::cluster;
using namespace std::chrono_literals;
using protocol::cluster_message;
using json = nlohmann::json;

namespace troupe::test::cluster_node {

/// What a fake peer received: the bytes as they came, and decoded.
struct inbox {
  std::vector<std::string> raw;
  std::vector<cluster_message> messages;

  std::size_t count(std::string_view kind, bool full = false) const {
    std::size_t n = 0;
    for (auto& m : messages) {
      auto* s = std::get_if<protocol::registry_sync>(&m.body);
      if ((kind == "hello" && std::holds_alternative<protocol::cluster_hello>(m.body)) ||
          (kind == "sync" && s && s->full == full) ||
          (kind == "load" && std::holds_alternative<protocol::load_report>(m.body)) ||
          (kind == "ack" && std::holds_alternative<protocol::cluster_ack>(m.body))) {
        ++n;
      }
    }
    return n;
  }

  /// The bodies of kind `T` received, in order.
  template <class T> std::vector<T> of() const {
    std::vector<T> out;
    for (auto& m : messages) {
      if (auto* x = std::get_if<T>(&m.body)) {
        out.push_back(*x);
      }
    }
    return out;
  }

  /// The records of every whole-registry sync received, in order.
  std::vector<protocol::worker_record> full_records() const {
    std::vector<protocol::worker_record> out;
    for (auto& m : messages) {
      if (auto* s = std::get_if<protocol::registry_sync>(&m.body); s && s->full) {
        out.insert(out.end(), s->records.begin(), s->records.end());
      }
    }
    return out;
  }
};

/// A peer node's endpoint as far as the node under test can tell: an actor on another node.
struct fake_peer {
  peer_actor actor;
  std::shared_ptr<inbox> got;
  caf::node_id node;
};

/// How the fake dialer answers a connect to one address.
struct dial_answer {
  caf::node_id node;
  caf::strong_actor_ptr actor;
};

struct dial_log {
  std::map<std::string, dial_answer> answers; ///< Missing: the connection is refused.
  std::vector<std::string> attempts;
};

inline caf::node_id other_node(int n) {
  auto hash = std::string(39, 'a') + std::to_string(n % 10);
  return *caf::make_node_id(static_cast<std::uint32_t>(1000 + n), hash);
}

inline protocol::worker_record record(std::string id, std::string url, std::uint64_t version,
                                      std::string origin) {
  protocol::worker_record r;
  r.id = std::move(id);
  r.spec.url = std::move(url);
  r.models = {"m"};
  r.version = version;
  r.origin = std::move(origin);
  return r;
}

/// One cluster node ("a" at 10.0.0.1:7000) with a real registry, a fake dialer and fake peers,
/// on the deterministic scheduler.
struct fixture : test::actor_system_fixture {
  boost::asio::io_context ioc; // never run: proxies are spawned, reach no worker
  std::shared_ptr<actors::fleet_view> fleet = std::make_shared<actors::fleet_view>();
  std::shared_ptr<services::cluster_view> view = std::make_shared<services::cluster_view>();
  std::shared_ptr<refusal_counts> refusals = std::make_shared<refusal_counts>();
  std::shared_ptr<dial_log> dials = std::make_shared<dial_log>();
  actors::registry_actor registry;
  dialer_actor dialer;
  node_handles node;
  int next_node = 1;

  fixture() {
    registry = actors::make_registry(sys, ioc, fleet, {}, actors::worker_proxy_config{}, {}, "a");
    auto log = dials;
    auto ifs = sys.message_types(caf::detail::type_list<peer_actor>{});
    dialer = keep(sys.spawn([log, ifs](dialer_actor::pointer) -> dialer_actor::behavior_type {
      return {
          [log, ifs](caf::connect_atom, const std::string& host, std::uint16_t port)
              -> caf::result<caf::node_id, caf::strong_actor_ptr, std::set<std::string>> {
            auto address = host + ":" + std::to_string(port);
            log->attempts.push_back(address);
            auto it = log->answers.find(address);
            if (it == log->answers.end()) {
              return caf::make_error(caf::sec::cannot_connect_to_node);
            }
            return {it->second.node, it->second.actor, ifs};
          },
      };
    }));
  }

  ~fixture() {
    // While the io_context still exists: the proxies' exchanges post their cancellation to it.
    caf::anon_send(node.node, stop_atom_v);
    caf::anon_send(registry, stop_atom_v);
    run();
  }

  node_config settings() {
    node_config c;
    c.name = "a";
    c.api_address = "10.0.0.1:30000";
    c.cluster_address = "10.0.0.1:7000";
    c.gossip_interval = 100ms;
    c.keepalive = 1s;
    c.suspect_after = 2s;
    c.down_after = 5s;
    c.reconnect_min = 100ms;
    c.reconnect_max = 200ms;
    c.connect_timeout = 1s;
    c.full_sync_interval = 1s;
    c.max_message_bytes = 64 * 1024;
    return c;
  }

  void start(node_config c) {
    start(std::move(c), node_deps{registry, view, nullptr, dialer, refusals, {}, {}, {}});
  }

  /// Starts the node with `deps` of the test's own (policies, a Responses affinity, ...).
  void start(node_config c, node_deps deps) {
    node = make_node(sys, std::move(c), std::move(deps));
    run();
  }

  fake_peer peer(const std::string& address = {}) {
    fake_peer p;
    p.got = std::make_shared<inbox>();
    p.node = other_node(next_node++);
    auto got = p.got;
    p.actor = keep(sys.spawn([got](peer_actor::pointer) -> peer_actor::behavior_type {
      return {[got](gossip_atom, std::string& bytes) {
        got->raw.push_back(bytes);
        std::string why;
        if (auto m = protocol::decode_message(bytes, why)) {
          got->messages.push_back(std::move(*m));
        }
      }};
    }));
    if (!address.empty()) {
      reachable(address, p);
    }
    return p;
  }

  /// Dialing `address` reaches `p`.
  void reachable(const std::string& address, const fake_peer& p) {
    dials->answers[address] = {p.node, caf::actor_cast<caf::strong_actor_ptr>(p.actor)};
  }

  /// `p` sends `m` (signed `from`, incarnation `inc`) to the node's endpoint.
  void say(const fake_peer& p, const std::string& from, cluster_message m, std::uint64_t inc = 42) {
    m.from = from;
    m.incarnation = inc;
    caf::send_as(p.actor, node.endpoint, gossip_atom_v, protocol::encode(m));
    run();
  }

  void hello(const fake_peer& p, const std::string& from, const std::string& address,
             std::vector<std::string> peers_known = {}, bool acks = false, std::uint64_t inc = 42) {
    cluster_message m;
    m.body = protocol::cluster_hello{"api:" + from, address, std::move(peers_known), acks};
    say(p, from, std::move(m), inc);
  }

  /// A new peer that says hello as `name` (incarnation `inc`), its hello first given by `shape`
  /// the fields saying what it reads (e.g. `[](auto& h) { h.responses = true; }`).
  template <class Shape>
  fake_peer greeted_peer(const std::string& name, Shape shape, std::uint64_t inc = 42) {
    auto p = peer();
    protocol::cluster_hello h{"api:" + name, "10.0.0.9:" + std::to_string(7000 + next_node), {}};
    shape(h);
    cluster_message m;
    m.body = std::move(h);
    say(p, name, std::move(m), inc);
    return p;
  }

  /// The messages of kind `T` that `p` received.
  template <class T> std::vector<T> received(const fake_peer& p) const {
    return p.got->template of<T>();
  }

  void sync(const fake_peer& p, const std::string& from, std::vector<protocol::worker_record> rs,
            bool full = false, std::uint64_t sync_id = 0) {
    cluster_message m;
    m.body = protocol::registry_sync{full, std::move(rs), sync_id};
    say(p, from, std::move(m));
  }

  void load(const fake_peer& p, const std::string& from, std::uint64_t seq,
            std::vector<std::pair<std::string, std::int32_t>> loads, std::uint64_t digest) {
    cluster_message m;
    m.body = protocol::load_report{seq, std::move(loads), digest, 0, 0, 0, true, {}};
    say(p, from, std::move(m));
  }

  /// A peer at `address` that the node dialed (as a seed) and that said hello: a member.
  fake_peer member(const std::string& name, const std::string& address, bool acks = false) {
    auto p = peer(address);
    auto c = settings();
    c.seeds = {address};
    start(c);
    hello(p, name, address, {}, acks);
    return p;
  }

  std::string add_worker(protocol::worker_spec spec) {
    auto id = ask<std::string>(registry, add_atom_v, std::move(spec));
    return id ? *id : "error";
  }

  const services::member_status* member_status(const std::string& name) {
    static std::shared_ptr<const services::cluster_status> keep;
    keep = view->get();
    for (auto& m : keep->members) {
      if (m.name == name) {
        return &m;
      }
    }
    return nullptr;
  }

  bool serves(const std::string& url) {
    for (auto& w : fleet->get()->workers) {
      if (w->spec.url == url) {
        return true;
      }
    }
    return false;
  }

  json inspect() {
    auto state = ask<std::string>(node.node, inspect_atom_v);
    return state ? json::parse(*state) : json{};
  }

  std::uint64_t refused(refusal r) const { return refusals->get(r); }
};

} // namespace troupe::test::cluster_node
