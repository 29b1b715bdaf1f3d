// Two nodes whose views of their link differ find each other again (cluster/node_rejoin.cpp),
// and nobody else is answered: on the deterministic scheduler.

#include "cluster/node.hpp"
#include "tests/cluster/node_fixture.hpp"

#include <catch2/catch.hpp>

using namespace troupe::test::cluster_node;

namespace {

/// How many of the hellos `p` received asked for its own (`again`).
std::size_t asking(const std::vector<protocol::cluster_hello>& hellos) {
  std::size_t n = 0;
  for (auto& h : hellos) {
    n += h.again ? 1 : 0;
  }
  return n;
}

cluster_message hello_again(const std::string& from, const std::string& address) {
  cluster_message m;
  protocol::cluster_hello h{"api:" + from, address, {}, false};
  h.again = true;
  m.body = h;
  return m;
}

} // namespace

namespace troupe::test::cluster_node {

struct rejoin_fixture : fixture {
  /// The link to `p` is lost on this node only (CAF dropped the proxy, say): `p` itself lives
  /// on and keeps its own link.
  void lose_link(const fake_peer& p) {
    caf::anon_send(caf::actor_cast<caf::actor>(node.node),
                   caf::down_msg{p.actor.address(), caf::exit_reason::remote_link_unreachable});
    run();
  }

  /// Node "a" (TLS or plain) with member "b" at 10.0.0.0:7000, which dialed "a" (its address
  /// sorts first: "a" never dials it).
  fake_peer member_that_dialed(bool tls) {
    auto c = settings();
    c.tls = tls;
    start(c);
    auto b = peer();
    hello(b, "b", "10.0.0.0:7000");
    REQUIRE(member_status("b")->state == "up");
    return b;
  }
};

} // namespace troupe::test::cluster_node

TEST_CASE_METHOD(rejoin_fixture, "over TLS, a member whose link this node lost while it kept its "
                                 "own is asked to greet again, and nobody else is") {
  auto b = member_that_dialed(true);
  REQUIRE(received<protocol::cluster_hello>(b).size() == 1);
  lose_link(b);
  REQUIRE(member_status("b")->state == "down");

  // b speaks on as before: refused, and asked (once per keepalive) for its hello.
  load(b, "b", 7, {}, 0);
  load(b, "b", 8, {}, 0);
  CHECK(refused(refusal::not_member) == 2);
  auto hellos = received<protocol::cluster_hello>(b);
  REQUIRE(hellos.size() == 2);
  CHECK(hellos.back().again);
  CHECK(inspect()["greetings_asked"] == 1);
  advance(1100ms);
  load(b, "b", 9, {}, 0);
  CHECK(asking(received<protocol::cluster_hello>(b)) == 2);

  SECTION("its hello makes it a member again, greeted from scratch; nothing more is asked") {
    auto syncs = b.got->count("sync", true);
    hello(b, "b", "10.0.0.0:7000");
    CHECK(member_status("b")->state == "up");
    CHECK_FALSE(received<protocol::cluster_hello>(b).back().again);
    CHECK(b.got->count("sync", true) == syncs + 1);
    load(b, "b", 10, {}, 0);
    CHECK(refused(refusal::not_member) == 3);
    advance(1100ms);
    CHECK(asking(received<protocol::cluster_hello>(b)) == 2);
  }
  SECTION("a stranger naming the member, from another actor, gets nothing") {
    auto s = peer();
    load(s, "b", 11, {}, 0);
    advance(1100ms);
    load(s, "b", 12, {}, 0);
    sync(s, "b", {record("w-evil", "http://10.6.6.6:8000", 100, "b")});
    CHECK(s.got->messages.empty());
    CHECK_FALSE(serves("http://10.6.6.6:8000"));
    CHECK(refused(refusal::not_member) == 6);
  }
  SECTION("the member's actor under another incarnation gets nothing") {
    auto before = b.got->messages.size();
    advance(1100ms);
    cluster_message m;
    m.body = protocol::load_report{13, {}, 0, 0, 0, 0, true, {}};
    say(b, "b", m, 43);
    CHECK(b.got->messages.size() == before);
  }
  SECTION("a name no member had gets nothing") {
    auto s = peer();
    load(s, "zz", 1, {}, 0);
    CHECK(s.got->messages.empty());
  }
}

TEST_CASE_METHOD(rejoin_fixture, "over a plain link nobody is answered for speaking before its "
                                 "hello, not even the actor of a lost member") {
  auto b = member_that_dialed(false);
  auto before = b.got->messages.size();
  lose_link(b);
  load(b, "b", 7, {}, 0);
  advance(1100ms);
  load(b, "b", 8, {}, 0);
  CHECK(refused(refusal::not_member) == 2);
  CHECK(b.got->messages.size() == before);
  CHECK(inspect()["greetings_asked"] == 0);
}

TEST_CASE_METHOD(rejoin_fixture, "a member asking on its own link is greeted again, once per "
                                 "keepalive; the same hello from a stranger gets nothing") {
  auto b = member("b", "10.0.0.2:7000");
  auto hellos = received<protocol::cluster_hello>(b);
  REQUIRE(hellos.size() == 1);
  CHECK(hellos[0].again); // a dial asks for the peer's hello
  auto loads = b.got->count("load");
  auto syncs = b.got->count("sync", true);

  say(b, "b", hello_again("b", "10.0.0.2:7000"));
  hellos = received<protocol::cluster_hello>(b);
  REQUIRE(hellos.size() == 2);
  CHECK_FALSE(hellos.back().again); // an answer asks for nothing: no ping-pong
  CHECK(b.got->count("load") == loads + 1);
  CHECK(inspect()["regreets"] == 1);

  say(b, "b", hello_again("b", "10.0.0.2:7000"));
  CHECK(received<protocol::cluster_hello>(b).size() == 2); // once per keepalive
  advance(1100ms);
  CHECK(b.got->count("sync", true) == syncs + 1); // the whole registry, as the limits allow
  say(b, "b", hello_again("b", "10.0.0.2:7000"));
  CHECK(received<protocol::cluster_hello>(b).size() == 3);

  auto s = peer();
  say(s, "b", hello_again("b", "10.0.0.9:7000"), 43);
  CHECK(s.got->messages.empty()); // a second node called b: refused as a duplicate
  CHECK(refused(refusal::duplicate_name) == 1);
}

TEST_CASE_METHOD(rejoin_fixture, "a new link's hello asking for ours is answered once, as any "
                                 "new link") {
  start(settings());
  auto b = peer();
  say(b, "b", hello_again("b", "10.0.0.0:7000"));
  CHECK(member_status("b")->state == "up");
  CHECK(received<protocol::cluster_hello>(b).size() == 1);
  CHECK(inspect()["regreets"] == 0);
}

TEST_CASE_METHOD(rejoin_fixture, "a dialed peer that has not said hello is asked again every "
                                 "suspect interval, until it does") {
  auto b = peer("10.0.0.2:7000");
  auto c = settings();
  c.seeds = {"10.0.0.2:7000"};
  start(c);
  REQUIRE(asking(received<protocol::cluster_hello>(b)) == 1);
  advance(1s);
  CHECK(asking(received<protocol::cluster_hello>(b)) == 1);
  advance(1100ms); // past suspect_after (2 s)
  CHECK(asking(received<protocol::cluster_hello>(b)) == 2);
  CHECK(inspect()["awaiting_hello"] == 1);

  hello(b, "b", "10.0.0.2:7000");
  CHECK(member_status("b")->state == "up");
  CHECK(inspect()["awaiting_hello"] == 0);
  advance(2100ms);
  advance(2100ms);
  CHECK(asking(received<protocol::cluster_hello>(b)) == 2);
}
