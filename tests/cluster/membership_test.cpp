#include "cluster/membership.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::cluster;
using namespace std::chrono_literals;

namespace {

using steady = std::chrono::steady_clock;
using heard = member_table::heard_result;

const auto wall = std::chrono::system_clock::time_point{std::chrono::seconds{1700000000}};

member_table members() {
  return member_table{member_table::timing{2s, 6s, 60s}};
}

protocol::load_report report(std::uint64_t seq,
                             std::vector<std::pair<std::string, std::int32_t>> loads) {
  protocol::load_report r;
  r.seq = seq;
  r.loads = std::move(loads);
  return r;
}

int sum_of(const member_table& t, const std::string& id) {
  auto it = t.remote_loads().find(id);
  return it == t.remote_loads().end() ? 0 : it->second;
}

} // namespace

TEST_CASE("a member heard from is up; silence makes it suspect, then down") {
  auto t = members();
  auto t0 = steady::time_point{} + 1h;
  CHECK(t.heard("b", 7, t0, wall) == heard::joined);
  CHECK(t.heard("b", 7, t0 + 1s, wall) == heard::known);
  CHECK(t.find("b")->state == member_state::up);
  CHECK(t.expire(t0 + 2s, wall).empty());
  CHECK(t.expire(t0 + 3s, wall) == std::vector<std::string>{"b"});
  CHECK(t.find("b")->state == member_state::suspect);
  CHECK(t.heard("b", 7, t0 + 4s, wall) == heard::recovered); // speaking clears suspicion
  CHECK(t.find("b")->state == member_state::up);
  CHECK(t.expire(t0 + 11s, wall) == std::vector<std::string>{"b"});
  CHECK(t.find("b")->state == member_state::down);
  CHECK(t.find("b")->reason.find("silent") != std::string::npos);
  CHECK(t.heard("b", 7, t0 + 12s, wall) == heard::joined);
  CHECK(t.count(member_state::up) == 1);
}

TEST_CASE("load is summed over members that are up") {
  auto t = members();
  auto t0 = steady::time_point{} + 1h;
  t.heard("b", 1, t0, wall);
  t.heard("c", 2, t0, wall);
  CHECK(t.report("b", report(1, {{"w-1", 2}, {"w-2", 1}})));
  CHECK(t.report("c", report(1, {{"w-1", 3}})));
  auto sums = t.remote_loads();
  CHECK(sums["w-1"] == 5);
  CHECK(sums["w-2"] == 1);

  SECTION("a newer report replaces the previous one; an older one is ignored") {
    CHECK(t.report("b", report(3, {{"w-2", 4}})));
    CHECK_FALSE(t.report("b", report(2, {{"w-1", 9}})));
    sums = t.remote_loads();
    CHECK(sums["w-1"] == 3);
    CHECK(sums["w-2"] == 4);
  }
  SECTION("a member declared down contributes nothing") {
    CHECK(t.down("c", "link lost", wall));
    CHECK_FALSE(t.down("c", "again", wall));
    CHECK(sum_of(t, "w-1") == 2);
    CHECK_FALSE(t.report("c", report(2, {{"w-1", 3}}))); // a late report of a dead node
    CHECK(sum_of(t, "w-1") == 2);
  }
  SECTION("a member silent past the timeout contributes nothing") {
    t.heard("b", 1, t0 + 6s, wall); // b stays up (heard 1 s ago)
    t.expire(t0 + 7s, wall);
    CHECK(t.find("c")->state == member_state::down);
    CHECK(sum_of(t, "w-1") == 2);
  }
  SECTION("a suspect member's load stops steering until it is heard again") {
    t.heard("b", 1, t0 + 2s, wall);
    CHECK(t.expire(t0 + 3s, wall) == std::vector<std::string>{"c"});
    CHECK(t.find("c")->state == member_state::suspect);
    CHECK(sum_of(t, "w-1") == 2);
    t.heard("c", 2, t0 + 3500ms, wall);
    CHECK(sum_of(t, "w-1") == 5);
  }
  SECTION("a restarted member's old report is void") {
    CHECK(t.heard("c", 99, t0 + 1s, wall) == heard::restarted);
    CHECK(sum_of(t, "w-1") == 2);
    CHECK(t.report("c", report(1, {{"w-1", 1}}))); // the new incarnation counts from 1 again
    CHECK(sum_of(t, "w-1") == 3);
  }
}

TEST_CASE("members down for long are forgotten") {
  auto t = members();
  auto t0 = steady::time_point{} + 1h;
  t.heard("b", 1, t0, wall);
  t.down("b", "left", wall);
  t.expire(t0 + 59s, wall);
  CHECK(t.find("b"));
  t.expire(t0 + 61s, wall);
  CHECK_FALSE(t.find("b"));
}

TEST_CASE("load deltas change only the workers they name") {
  auto t = members();
  auto t0 = steady::time_point{} + 1h;
  t.heard("b", 1, t0, wall);
  t.heard("c", 2, t0, wall);
  CHECK(t.report("b", report(5, {{"w-1", 2}, {"w-2", 1}})));
  CHECK(t.report("c", report(1, {{"w-1", 3}})));
  t.take_changed();
  auto delta = [](std::uint64_t seq, std::vector<std::pair<std::string, std::int32_t>> loads) {
    auto r = report(seq, std::move(loads));
    r.full = false;
    return r;
  };

  CHECK(t.report("b", delta(6, {{"w-2", 0}, {"w-3", 4}})));
  CHECK(t.remote_loads().at("w-1") == 5); // untouched
  CHECK(t.remote_loads().count("w-2") == 0);
  CHECK(t.remote_loads().at("w-3") == 4);
  auto changed = t.take_changed();
  std::sort(changed.begin(), changed.end());
  CHECK(changed == std::vector<std::string>{"w-2", "w-3"});
  CHECK_FALSE(t.report("b", delta(7, {}))); // a keepalive: nothing changed
  CHECK(t.take_changed().empty());

  SECTION("a missed delta: deltas wait for a whole report") {
    CHECK_FALSE(t.report("b", delta(9, {{"w-1", 9}})));
    CHECK(t.find("b")->needs_full);
    CHECK_FALSE(t.report("b", delta(10, {{"w-1", 9}})));
    CHECK(t.remote_loads().at("w-1") == 5);
    CHECK(t.report("b", report(10, {{"w-1", 1}})));
    CHECK_FALSE(t.find("b")->needs_full);
    CHECK(t.remote_loads().at("w-1") == 4);
    CHECK(t.remote_loads().count("w-3") == 0);
    CHECK(t.report("b", delta(11, {{"w-3", 1}})));
    CHECK(t.remote_loads().at("w-3") == 1);
  }
  SECTION("the sums follow members going suspect, back, and down") {
    t.heard("c", 2, t0 + 2s, wall);
    t.expire(t0 + 2500ms, wall); // b is suspect
    CHECK(t.remote_loads().at("w-1") == 3);
    CHECK(t.remote_loads().count("w-3") == 0);
    t.heard("b", 1, t0 + 2600ms, wall);
    CHECK(t.remote_loads().at("w-1") == 5);
    CHECK(t.remote_loads().at("w-3") == 4);
    t.down("c", "left", wall);
    CHECK(t.remote_loads().at("w-1") == 2);
  }
}
