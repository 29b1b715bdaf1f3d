// Load gossip of the cluster node on the deterministic scheduler: a whole report when a link
// comes up, then deltas once per gossip interval, received deltas touching only the workers
// they name, and a missed delta asked for again.

#include "cluster/node.hpp"
#include "tests/cluster/node_fixture.hpp"

#include <catch2/catch.hpp>

using namespace troupe::test::cluster_node;

namespace {

protocol::load_report load_of(std::uint64_t seq, bool full,
                              std::vector<std::pair<std::string, std::int32_t>> loads) {
  protocol::load_report r;
  r.seq = seq;
  r.full = full;
  r.loads = std::move(loads);
  return r;
}

} // namespace

TEST_CASE_METHOD(fixture, "load travels as a whole report, then as deltas per interval") {
  auto id = add_worker(
      {"http://10.0.0.90:8000", protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
  auto other = add_worker(
      {"http://10.0.0.91:8000", protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
  auto b = peer("10.0.0.2:7000");
  auto c = settings();
  c.seeds = {"10.0.0.2:7000"};
  start(c);
  cluster_message h;
  protocol::cluster_hello hello{"api:b", "10.0.0.2:7000", {}, true, true};
  h.body = hello;
  say(b, "b", h);

  auto reports = received<protocol::load_report>(b);
  REQUIRE_FALSE(reports.empty());
  CHECK(reports.front().full); // the base deltas build on

  auto live = fleet->get()->find(id)->live;
  live->in_flight = 2;
  fleet->get()->find(other)->live->in_flight = 1;
  advance(100ms);
  live->in_flight = 3;
  fleet->get()->find(other)->live->in_flight = 0;
  advance(100ms);
  reports = received<protocol::load_report>(b);
  REQUIRE(reports.size() >= 3);
  auto& last = reports.back();
  CHECK_FALSE(last.full);
  std::map<std::string, int> changed(last.loads.begin(), last.loads.end());
  CHECK(changed == std::map<std::string, int>{{id, 3}, {other, 0}});
  CHECK(last.seq == reports[reports.size() - 2].seq + 1);
  auto sent = reports.size();
  advance(100ms); // nothing changed: nothing sent before the keepalive
  CHECK(received<protocol::load_report>(b).size() == sent);

  // b's own reports: whole, then deltas; a gap is asked for again.
  cluster_message m;
  m.body = load_of(1, true, {{id, 4}, {other, 1}});
  say(b, "b", m);
  CHECK(live->remote_in_flight.load() == 4);
  m.body = load_of(2, false, {{other, 0}});
  say(b, "b", m);
  CHECK(live->remote_in_flight.load() == 4);
  CHECK(fleet->get()->find(other)->live->remote_in_flight.load() == 0);
  m.body = load_of(4, false, {{id, 9}}); // 3 went missing
  say(b, "b", m);
  CHECK(live->remote_in_flight.load() == 4);
  live->in_flight = 1;
  advance(100ms);
  auto asked = received<protocol::load_report>(b).back();
  CHECK(asked.resend == std::vector<std::string>{"b"});
  m.body = load_of(4, true, {{id, 9}});
  say(b, "b", m);
  CHECK(live->remote_in_flight.load() == 9);

  // b missed one of ours: the next report it gets is whole.
  m.body = load_of(5, false, {});
  std::get<protocol::load_report>(m.body).resend = {"a"};
  say(b, "b", m);
  live->in_flight = 2;
  advance(100ms);
  auto whole = received<protocol::load_report>(b).back();
  CHECK(whole.full);
  CHECK(whole.loads == std::vector<std::pair<std::string, std::int32_t>>{{id, 2}});
}
