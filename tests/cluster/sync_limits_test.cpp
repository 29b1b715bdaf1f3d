#include "cluster/sync_limits.hpp"

#include <catch2/catch.hpp>

using namespace troupe::cluster;
using namespace std::chrono_literals;

TEST_CASE("whole registries go to a member at most once per interval") {
  sync_limits l{1000ms};
  auto t0 = sync_limits::clock::time_point{} + 1h;
  CHECK(l.may_send("b", t0));
  l.sent("b", t0);
  CHECK_FALSE(l.may_send("b", t0 + 999ms));
  CHECK(l.may_send("c", t0)); // per member
  CHECK(l.may_send("b", t0 + 1000ms));
  CHECK(l.next_send("b") == t0 + 1000ms);
}

TEST_CASE("whole registries are taken from a member at most once per half interval") {
  sync_limits l{1000ms};
  auto t0 = sync_limits::clock::time_point{} + 1h;
  CHECK(l.accept("b", 1, t0));
  CHECK(l.accept("b", 1, t0 + 1ms)); // another part of the same sync
  CHECK_FALSE(l.accept("b", 2, t0 + 499ms));
  CHECK(l.accept("c", 5, t0)); // per member
  CHECK(l.accept("b", 3, t0 + 500ms));
  SECTION("unnumbered syncs (older senders) count one by one") {
    CHECK_FALSE(l.accept("b", 0, t0 + 600ms));
    CHECK(l.accept("b", 0, t0 + 1000ms));
    CHECK_FALSE(l.accept("b", 0, t0 + 1001ms));
  }
  SECTION("a forgotten member starts afresh") {
    l.forget("b");
    CHECK(l.accept("b", 4, t0 + 501ms));
  }
}
