#include "cluster/node.hpp"
#include "tests/cluster/node_fixture.hpp"

#include <catch2/catch.hpp>

using namespace troupe::test::cluster_node;

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

  auto id = add_worker(
      {"http://10.0.0.40:8000", protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
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
                        "sk-local-secret",
                        {},
                        {},
                        {}});
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
  auto id = add_worker(
      {"http://10.0.0.40:8000", protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
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
  auto id = add_worker(
      {"http://10.0.0.40:8000", protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
  auto b = member("b", "10.0.0.2:7000");
  load(b, "b", 1, {{id, 2}}, 0);
  auto live = fleet->get()->find(id)->live;
  CHECK(live->remote_in_flight.load() == 2);
  advance(2100ms);
  CHECK(member_status("b")->state == "suspect");
  CHECK(live->remote_in_flight.load() == 0); // a suspect node's load no longer steers
  load(b, "b", 2, {{id, 1}}, 0);
  CHECK(member_status("b")->state == "up");
  CHECK(live->remote_in_flight.load() == 1);
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
