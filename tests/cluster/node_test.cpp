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

namespace {

/// What a fake peer received.
struct inbox {
  std::vector<cluster_message> messages;

  std::size_t count(std::string_view kind, bool full = false) const {
    std::size_t n = 0;
    for (auto& m : messages) {
      auto* s = std::get_if<protocol::registry_sync>(&m.body);
      if ((kind == "hello" && std::holds_alternative<protocol::cluster_hello>(m.body)) ||
          (kind == "sync" && s && s->full == full) ||
          (kind == "load" && std::holds_alternative<protocol::load_report>(m.body))) {
        ++n;
      }
    }
    return n;
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

caf::node_id other_node(int n) {
  auto hash = std::string(39, 'a') + std::to_string(n % 10);
  return *caf::make_node_id(static_cast<std::uint32_t>(1000 + n), hash);
}

protocol::worker_record record(std::string id, std::string url, std::uint64_t version,
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
    node = make_node(sys, std::move(c), node_deps{registry, view, nullptr, dialer, refusals});
    run();
  }

  fake_peer peer(const std::string& address = {}) {
    fake_peer p;
    p.got = std::make_shared<inbox>();
    p.node = other_node(next_node++);
    auto got = p.got;
    p.actor = keep(sys.spawn([got](peer_actor::pointer) -> peer_actor::behavior_type {
      return {[got](gossip_atom, std::string& bytes) {
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

  /// `p` sends `m` (signed `from`) to the node's endpoint.
  void say(const fake_peer& p, const std::string& from, cluster_message m) {
    m.from = from;
    m.incarnation = 42;
    caf::send_as(p.actor, node.endpoint, gossip_atom_v, protocol::encode(m));
    run();
  }

  void hello(const fake_peer& p, const std::string& from, const std::string& address,
             std::vector<std::string> peers_known = {}) {
    cluster_message m;
    m.body = protocol::cluster_hello{"api:" + from, address, std::move(peers_known)};
    say(p, from, std::move(m));
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
    m.body = protocol::load_report{seq, std::move(loads), digest, 0, 0, 0};
    say(p, from, std::move(m));
  }

  /// A peer at `address` that the node dialed (as a seed) and that said hello: a member.
  fake_peer member(const std::string& name, const std::string& address) {
    auto p = peer(address);
    auto c = settings();
    c.seeds = {address};
    start(c);
    hello(p, name, address);
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

} // namespace

TEST_CASE_METHOD(fixture, "a seed is dialed, and the peer it reaches is a member once it speaks") {
  auto b = peer("10.0.0.2:7000");
  auto c = settings();
  c.seeds = {"10.0.0.2:7000"};
  start(c);
  CHECK(dials->attempts == std::vector<std::string>{"10.0.0.2:7000"});
  REQUIRE(b.got->count("hello") == 1); // greeted on the link at once
  CHECK(b.got->messages[0].from == "a");
  CHECK(b.got->count("sync", true) == 0); // the registry goes to named members only

  hello(b, "b", "10.0.0.2:7000");
  REQUIRE(member_status("b"));
  CHECK(member_status("b")->state == "up");
  CHECK(member_status("b")->api_address == "api:b");
  CHECK(b.got->count("sync", true) == 1);
  CHECK(b.got->count("hello") == 1); // not twice

  // Its writes are merged into the registry.
  sync(b, "b", {record("w-b1", "http://10.0.0.20:8000", 100, "b")});
  CHECK(serves("http://10.0.0.20:8000"));
  CHECK(view->get()->transport == "plain");
  CHECK(inspect()["links"] == 1);
}

TEST_CASE_METHOD(fixture, "this node's writes reach its members as they happen; a member's are "
                          "merged by version, and never sent back") {
  auto b = member("b", "10.0.0.2:7000");
  auto deltas = [&] {
    std::vector<protocol::worker_record> out;
    for (auto& m : b.got->messages) {
      if (auto* s = std::get_if<protocol::registry_sync>(&m.body); s && !s->full) {
        out.insert(out.end(), s->records.begin(), s->records.end());
      }
    }
    return out;
  };
  REQUIRE(deltas().empty());

  auto id = add_worker({"http://10.0.0.40:8000", protocol::worker_type::regular, {}, {}, {}, {}});
  run();
  auto sent = deltas();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].id == id);
  CHECK(sent[0].origin == "a");
  CHECK_FALSE(sent[0].deleted);
  auto version = sent[0].version;

  SECTION("an older tombstone from a member changes nothing") {
    auto stale = record(id, "http://10.0.0.40:8000", version - 1, "b");
    stale.deleted = true;
    sync(b, "b", {stale});
    CHECK(serves("http://10.0.0.40:8000"));
  }
  SECTION("a member's newer tombstone removes the worker here too") {
    auto gone = record(id, "http://10.0.0.40:8000", version + 1, "b");
    gone.deleted = true;
    sync(b, "b", {gone});
    CHECK_FALSE(serves("http://10.0.0.40:8000"));
  }
  SECTION("a removal here goes out as a newer tombstone") {
    auto removed = ask<bool>(registry, remove_atom_v, id);
    REQUIRE(removed);
    CHECK(*removed);
    run();
    sent = deltas();
    REQUIRE(sent.size() == 2);
    CHECK(sent[1].id == id);
    CHECK(sent[1].deleted);
    CHECK(sent[1].version > version);
  }
  // What a member wrote is its own news: merging it sends nothing back.
  sync(b, "b", {record("w-b2", "http://10.0.0.41:8000", 100, "b")});
  CHECK(serves("http://10.0.0.41:8000"));
  for (auto& r : deltas()) {
    CHECK(r.origin == "a");
  }
}

TEST_CASE_METHOD(fixture, "api keys leave a node only over TLS links") {
  auto id = add_worker({"https://provider.example",
                        protocol::worker_type::regular,
                        {},
                        {},
                        protocol::provider_kind::openai,
                        "sk-local-secret"});
  REQUIRE(id != "error");
  auto b = peer("10.0.0.2:7000");
  auto c = settings();
  c.seeds = {"10.0.0.2:7000"};
  SECTION("plain links: the key is left out, and the record says so") {
    start(c);
    hello(b, "b", "10.0.0.2:7000");
    auto rs = b.got->full_records();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].spec.api_key.empty());
    CHECK(rs[0].key_withheld);
    CHECK(inspect()["keys_withheld"] == 1);
  }
  SECTION("TLS links: the key travels") {
    c.tls = true;
    start(c);
    hello(b, "b", "10.0.0.2:7000");
    auto rs = b.got->full_records();
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].spec.api_key == "sk-local-secret");
    CHECK_FALSE(rs[0].key_withheld);
    CHECK(view->get()->transport == "tls");
  }
}

TEST_CASE_METHOD(fixture, "an actor is a member from its hello on; before, what it sends "
                          "changes nothing") {
  start(settings());
  auto stranger = peer();
  sync(stranger, "c", {record("w-x", "http://10.6.6.6:8000", 1ull << 62, "c")});
  load(stranger, "c", 1, {}, 0);
  CHECK_FALSE(serves("http://10.6.6.6:8000"));
  CHECK(refused(refusal::not_member) == 2);
  CHECK(member_status("c") == nullptr);
  CHECK(stranger.got->messages.empty()); // nothing goes to a stranger

  hello(stranger, "c", "10.0.0.8:7000");
  REQUIRE(member_status("c"));
  CHECK(member_status("c")->state == "up");
  CHECK(member_status("c")->cluster_address == "10.0.0.8:7000");
  CHECK(stranger.got->count("hello") == 1);
  CHECK(stranger.got->count("sync", true) == 1);
  sync(stranger, "c", {record("w-c", "http://10.0.0.30:8000", 100, "c")});
  CHECK(serves("http://10.0.0.30:8000"));
  CHECK(dials->attempts.empty()); // linked already: never a second connection

  SECTION("a hello claiming a member's address is refused") {
    auto other = peer();
    hello(other, "d", "10.0.0.8:7000");
    CHECK(member_status("d") == nullptr);
    CHECK(refused(refusal::not_member) == 3);
  }
  SECTION("another actor speaking for a member is refused") {
    auto other = peer();
    sync(other, "c", {record("w-y", "http://10.6.6.7:8000", 1ull << 62, "c")});
    CHECK_FALSE(serves("http://10.6.6.7:8000"));
    CHECK(refused(refusal::not_member) == 3);
  }
}

TEST_CASE_METHOD(fixture, "of two nodes, the one whose address sorts first dials the other") {
  auto c = settings();
  c.passive_dial_after = 1s;
  c.seeds = {"10.0.0.0:7000"}; // sorts before this node's 10.0.0.1:7000: that node dials
  auto low = peer("10.0.0.0:7000");
  SECTION("it does: this node never dials it") {
    start(c);
    CHECK(dials->attempts.empty());
    hello(low, "low", "10.0.0.0:7000");
    CHECK(member_status("low")->state == "up");
    for (int i = 0; i < 20; ++i) {
      advance(100ms);
    }
    CHECK(dials->attempts.empty());
  }
  SECTION("no link comes: this node dials after a while") {
    start(c);
    advance(500ms);
    CHECK(dials->attempts.empty());
    for (int i = 0; i < 6; ++i) {
      advance(100ms);
    }
    CHECK(dials->attempts == std::vector<std::string>{"10.0.0.0:7000"});
    CHECK(low.got->count("hello") == 1);
  }
}

TEST_CASE_METHOD(fixture, "the endpoint drops what no peer sends, and nothing stops it") {
  auto c = settings();
  c.max_message_bytes = 1024;
  c.seeds = {"10.0.0.2:7000"};
  auto b = peer("10.0.0.2:7000");
  start(c);
  hello(b, "b", "10.0.0.2:7000");
  auto before = inspect()["messages_in"].get<int>();

  caf::anon_send(node.endpoint, gossip_atom_v, std::string{"x"});
  run();
  CHECK(refused(refusal::no_sender) == 1);

  caf::send_as(b.actor, node.endpoint, gossip_atom_v, std::string(1025, 'x'));
  run();
  CHECK(refused(refusal::too_large) == 1);

  caf::anon_send(caf::actor_cast<caf::actor>(node.endpoint), 42);
  caf::anon_send(caf::actor_cast<caf::actor>(node.endpoint), stop_atom_v);
  run();
  CHECK(refused(refusal::unexpected) == 2);

  // An exit message, even one with reason `kill`, stops a scheduled actor: not this one.
  caf::anon_send_exit(node.endpoint, caf::exit_reason::kill);
  caf::send_as(caf::actor_cast<caf::actor>(b.actor), caf::actor_cast<caf::actor>(node.endpoint),
               caf::exit_msg{b.actor.address(), caf::exit_reason::user_shutdown});
  run();
  CHECK(refused(refusal::remote_exit) == 2);
  CHECK(inspect()["messages_in"].get<int>() == before); // none of it reached the node

  sync(b, "b", {record("w-b1", "http://10.0.0.20:8000", 100, "b")});
  CHECK(serves("http://10.0.0.20:8000"));
  CHECK(inspect()["messages_in"].get<int>() == before + 1);
}

TEST_CASE_METHOD(fixture, "malformed gossip and a peer using this node's name are refused") {
  auto b = member("b", "10.0.0.2:7000");
  caf::send_as(b.actor, node.endpoint, gossip_atom_v, std::string{"\xc1 not msgpack"});
  run();
  CHECK(refused(refusal::malformed) == 1);
  CHECK_FALSE(inspect()["last_decode_error"].get<std::string>().empty());
  sync(b, "a", {record("w-x", "http://10.6.6.6:8000", 1ull << 62, "a")});
  CHECK(refused(refusal::name_clash) == 1);
  CHECK_FALSE(serves("http://10.6.6.6:8000"));
}

TEST_CASE_METHOD(fixture, "whole registries: at most one per interval to a member, and from one") {
  auto b = member("b", "10.0.0.2:7000");
  REQUIRE(b.got->count("sync", true) == 1);

  SECTION("a member whose digest differs gets ours again, but not sooner than the interval") {
    load(b, "b", 1, {}, 0xbad);
    load(b, "b", 2, {}, 0xbad);
    CHECK(b.got->count("sync", true) == 1); // due, and waiting
    CHECK(inspect()["full_syncs_waiting"] == 1);
    advance(1000ms);
    CHECK(b.got->count("sync", true) == 2);
    CHECK(inspect()["full_syncs_waiting"] == 0);
  }
  SECTION("from a member: the parts of one sync pass; another sync soon after does not") {
    sync(b, "b", {record("w-1", "http://10.0.0.21:8000", 100, "b")}, true, 7);
    sync(b, "b", {record("w-2", "http://10.0.0.22:8000", 100, "b")}, true, 7);
    CHECK(serves("http://10.0.0.21:8000"));
    CHECK(serves("http://10.0.0.22:8000"));
    sync(b, "b", {record("w-3", "http://10.0.0.23:8000", 100, "b")}, true, 8);
    CHECK_FALSE(serves("http://10.0.0.23:8000"));
    CHECK(refused(refusal::sync_rate) == 1);
    advance(500ms);
    sync(b, "b", {record("w-3", "http://10.0.0.23:8000", 100, "b")}, true, 9);
    CHECK(serves("http://10.0.0.23:8000"));
    // Deltas are never limited.
    sync(b, "b", {record("w-4", "http://10.0.0.24:8000", 100, "b")});
    CHECK(serves("http://10.0.0.24:8000"));
  }
}

TEST_CASE_METHOD(fixture, "a learned address that keeps failing is given up; a seed never is") {
  auto c = settings();
  c.max_dial_failures = 3;
  c.seeds = {"10.0.0.2:7000", "10.0.0.3:7000"}; // the second never answers
  auto b = peer("10.0.0.2:7000");
  start(c);
  hello(b, "b", "10.0.0.2:7000", {"10.0.0.5:7000"});
  for (int i = 0; i < 30; ++i) {
    advance(100ms);
  }
  auto attempts = [&](const std::string& a) {
    return std::count(dials->attempts.begin(), dials->attempts.end(), a);
  };
  CHECK(attempts("10.0.0.5:7000") == 3);
  CHECK(attempts("10.0.0.3:7000") > 3);
  auto state = inspect();
  CHECK(state["dials_given_up"] == 1);
  std::set<std::string> listed;
  for (auto& d : state["dials"]) {
    listed.insert(d["address"].get<std::string>());
  }
  CHECK(listed == std::set<std::string>{"10.0.0.2:7000", "10.0.0.3:7000"});
}

TEST_CASE_METHOD(fixture, "a member's load counts until its link goes; then it is redialed") {
  auto id = add_worker({"http://10.0.0.40:8000", protocol::worker_type::regular, {}, {}, {}, {}});
  auto b = member("b", "10.0.0.2:7000");
  load(b, "b", 1, {{id, 3}}, 0);
  auto live = fleet->get()->find(id)->live;
  CHECK(live->remote_in_flight.load() == 3);
  auto dialed = dials->attempts.size();

  caf::anon_send_exit(b.actor, caf::exit_reason::user_shutdown);
  run();
  REQUIRE(member_status("b"));
  CHECK(member_status("b")->state == "down");
  CHECK(member_status("b")->reason.find("link lost") == 0);
  CHECK(live->remote_in_flight.load() == 0);
  advance(200ms);
  CHECK(dials->attempts.size() > dialed);
}

TEST_CASE_METHOD(fixture, "a silent member is suspect, then down; a goodbye drops it at once") {
  auto b = member("b", "10.0.0.2:7000");
  advance(2100ms);
  CHECK(member_status("b")->state == "suspect");
  load(b, "b", 1, {}, 0);
  CHECK(member_status("b")->state == "up");
  SECTION("silence") {
    for (int i = 0; i < 52; ++i) {
      advance(100ms);
    }
    CHECK(member_status("b")->state == "down");
    CHECK(member_status("b")->reason.find("silent") == 0);
  }
  SECTION("goodbye") {
    cluster_message m;
    m.body = protocol::cluster_bye{};
    say(b, "b", m);
    CHECK(member_status("b")->state == "down");
    CHECK(member_status("b")->reason == "left the cluster");
  }
}
