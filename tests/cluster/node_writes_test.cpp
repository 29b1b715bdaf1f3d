// The cluster node's writes and merges on the deterministic scheduler: a registration answered
// only once a member confirms it, acks and relays of what members write, versions from the far
// future refused, and a second node with a member's name refused until the member is gone.

#include "cluster/node.hpp"
#include "tests/cluster/node_fixture.hpp"

#include <catch2/catch.hpp>

using namespace troupe::test::cluster_node;

namespace {

protocol::worker_spec spec(std::string url) {
  return {std::move(url), protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}};
}

std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

TEST_CASE_METHOD(fixture, "a registration is answered once a member that confirms writes has it") {
  auto b = member("b", "10.0.0.2:7000", true);
  auto answer = ask_later<std::string>(registry, add_atom_v, spec("http://10.0.0.50:8000"));
  run();
  CHECK_FALSE(*answer); // sent to b, not confirmed yet
  auto syncs = received<protocol::registry_sync>(b);
  REQUIRE_FALSE(syncs.empty());
  auto& written = syncs.back().records.at(0);
  CHECK(written.spec.url == "http://10.0.0.50:8000");

  SECTION("confirmed") {
    cluster_message ack;
    ack.body = protocol::cluster_ack{{{written.id, written.version}}};
    say(b, "b", ack);
    REQUIRE(*answer);
    REQUIRE(**answer);
    CHECK(***answer == written.id);
    CHECK(inspect()["writes_confirmed_by_peer"] == 1);
  }
  SECTION("an ack of another version confirms nothing") {
    cluster_message ack;
    ack.body = protocol::cluster_ack{{{written.id, written.version - 1}}};
    say(b, "b", ack);
    CHECK_FALSE(*answer);
  }
  SECTION("not confirmed in time, no state file: an error, the worker stays here") {
    for (int i = 0; i < 21; ++i) {
      advance(100ms);
    }
    REQUIRE(*answer);
    REQUIRE_FALSE(**answer);
    CHECK(sys.render((*answer)->error()).find("no peer confirmed it") != std::string::npos);
    CHECK(serves("http://10.0.0.50:8000"));
    CHECK(inspect()["writes_unconfirmed"] == 1);
  }
  SECTION("the member goes: the write does not wait for the timeout") {
    caf::anon_send_exit(b.actor, caf::exit_reason::user_shutdown);
    run();
    advance(100ms);
    REQUIRE(*answer);
    CHECK_FALSE(**answer);
  }
}

TEST_CASE_METHOD(fixture, "a write is answered at once when no linked member confirms writes") {
  auto b = member("b", "10.0.0.2:7000", false); // an older node: it never acks
  auto id = add_worker(spec("http://10.0.0.51:8000"));
  CHECK(id.rfind("w-", 0) == 0);
  CHECK(received<protocol::registry_sync>(b).size() >= 1);
}

TEST_CASE_METHOD(fixture, "what a member writes is confirmed to it and relayed to the others") {
  auto b = member("b", "10.0.0.2:7000", true);
  auto c = peer();
  hello(c, "c", "10.0.0.3:7000", {}, true);
  auto before_c = received<protocol::registry_sync>(c).size();
  auto r = record("w-1", "http://10.0.0.60:8000", 1000, "b");
  sync(b, "b", {r});
  CHECK(serves("http://10.0.0.60:8000"));
  auto acks = received<protocol::cluster_ack>(b);
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].records == std::vector<std::pair<std::string, std::uint64_t>>{{"w-1", 1000}});
  auto to_c = received<protocol::registry_sync>(c);
  REQUIRE(to_c.size() == before_c + 1);
  CHECK_FALSE(to_c.back().full);
  CHECK(to_c.back().records.at(0).id == "w-1");
  CHECK(received<protocol::cluster_ack>(c).empty());

  // The same record again (say, c's relay of it): neither relayed nor confirmed twice over.
  auto before_b = received<protocol::registry_sync>(b).size();
  sync(c, "c", {r});
  CHECK(received<protocol::registry_sync>(b).size() == before_b);
  CHECK(received<protocol::registry_sync>(c).size() == before_c + 1);
  CHECK(received<protocol::cluster_ack>(c).empty()); // c did not write it
}

TEST_CASE_METHOD(fixture, "records versioned far ahead of this node's clock are refused") {
  auto b = member("b", "10.0.0.2:7000");
  auto now = static_cast<std::uint64_t>(wall_now_ms());
  auto ahead = record("w-far", "http://10.0.0.70:8000", now + 3600 * 1000, "b");
  auto max = record("w-max", "http://10.0.0.71:8000", UINT64_MAX, "b");
  auto fine = record("w-ok", "http://10.0.0.72:8000", now + 5000, "b");
  sync(b, "b", {ahead, max, fine});
  CHECK_FALSE(serves("http://10.0.0.70:8000"));
  CHECK_FALSE(serves("http://10.0.0.71:8000"));
  CHECK(serves("http://10.0.0.72:8000")); // within the tolerance (60 s)
  CHECK(refused(refusal::future_version) == 2);
  // This node's own clock was not dragged ahead: its next write is versioned near now.
  add_worker(spec("http://10.0.0.73:8000"));
  auto shared = fleet->get()->shared_version;
  CHECK(shared < now + 60 * 1000);
}

TEST_CASE_METHOD(fixture, "a second node with a member's name is refused while the member is up") {
  auto b = member("b", "10.0.0.2:7000");
  auto id = add_worker(spec("http://10.0.0.80:8000"));
  auto twin = peer();
  hello(twin, "b", "10.0.0.9:7000", {}, false, 4343);
  CHECK(refused(refusal::duplicate_name) == 1);
  REQUIRE(member_status("b"));
  CHECK(member_status("b")->incarnation == 42);
  auto conflicts = view->get()->name_conflicts;
  REQUIRE(conflicts.size() == 1);
  CHECK(conflicts[0].name == "b");
  CHECK(conflicts[0].member_address == "10.0.0.2:7000");
  CHECK(conflicts[0].refused_address == "10.0.0.9:7000");

  // What the twin says counts for nothing.
  cluster_message m;
  m.body = protocol::load_report{1, {{id, 7}}, 0, 0, 0, 0, true, {}};
  say(twin, "b", m, 4343);
  CHECK(refused(refusal::duplicate_name) == 2);
  CHECK(fleet->get()->find(id)->live->remote_in_flight.load() == 0);

  SECTION("the twin goes: the conflict is over") {
    caf::anon_send_exit(twin.actor, caf::exit_reason::user_shutdown);
    run();
    CHECK(view->get()->name_conflicts.empty());
    CHECK(member_status("b")->state == "up");
  }
  SECTION("the member goes: the twin is the member now") {
    caf::anon_send_exit(b.actor, caf::exit_reason::user_shutdown);
    run();
    CHECK(view->get()->name_conflicts.empty());
    REQUIRE(member_status("b"));
    CHECK(member_status("b")->state == "up");
    CHECK(member_status("b")->incarnation == 4343);
    CHECK(member_status("b")->cluster_address == "10.0.0.9:7000");
    say(twin, "b", m, 4343);
    CHECK(fleet->get()->find(id)->live->remote_in_flight.load() == 7);
  }
}

TEST_CASE_METHOD(fixture, "a restart (the old incarnation gone) is no duplicate") {
  auto b = member("b", "10.0.0.2:7000");
  caf::anon_send_exit(b.actor, caf::exit_reason::user_shutdown);
  run();
  auto again = peer();
  hello(again, "b", "10.0.0.2:7000", {}, false, 77);
  CHECK(refused(refusal::duplicate_name) == 0);
  CHECK(member_status("b")->state == "up");
  CHECK(member_status("b")->incarnation == 77);
}
