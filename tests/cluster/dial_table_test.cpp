#include "cluster/dial_table.hpp"

#include <catch2/catch.hpp>

using namespace troupe::cluster;
using namespace std::chrono_literals;

namespace {

using clock_type = dial_table::clock;

dial_table table(unsigned max_failures = 3, std::size_t max_learned = 2) {
  return dial_table{dial_table::settings{100ms, 400ms, max_failures, max_learned}};
}

auto none_linked = [](const std::string&) { return false; };

} // namespace

TEST_CASE("a dial that fails is retried after a backoff that doubles up to the maximum") {
  auto t = table();
  std::string why;
  REQUIRE(t.add_seed("10.0.0.2:7000", why));
  auto t0 = clock_type::time_point{} + 1h;
  CHECK(t.due(t0, none_linked) == std::vector<std::string>{"10.0.0.2:7000"});
  CHECK(t.due(t0, none_linked).empty()); // connecting
  CHECK_FALSE(t.failed("10.0.0.2:7000", "refused", t0));
  CHECK(t.due(t0 + 99ms, none_linked).empty());
  CHECK(t.due(t0 + 100ms, none_linked).size() == 1);
  t.failed("10.0.0.2:7000", "refused", t0 + 100ms);
  CHECK(t.find("10.0.0.2:7000")->backoff == 200ms);
  for (int i = 0; i < 5; ++i) {
    t.failed("10.0.0.2:7000", "refused", t0);
  }
  CHECK(t.find("10.0.0.2:7000")->backoff == 400ms);
  CHECK(t.find("10.0.0.2:7000")->failures == 7); // a seed is never given up
  t.succeeded("10.0.0.2:7000");
  CHECK(t.find("10.0.0.2:7000")->failures == 0);
  CHECK(t.due(t0 + 1h, [](auto&) { return true; }).empty()); // linked: not dialed
}

TEST_CASE("learned addresses are bounded in number and given up after failures in a row") {
  auto t = table(3, 2);
  std::string why;
  auto t0 = clock_type::time_point{} + 1h;
  CHECK(t.learn("10.0.0.1:7000", "10.0.0.1:7000", why) == dial_table::learned::known); // own
  CHECK(t.learn("10.0.0.5:7000", "10.0.0.1:7000", why) == dial_table::learned::added);
  CHECK(t.learn("10.0.0.5:7000", "10.0.0.1:7000", why) == dial_table::learned::known);
  CHECK(t.learn("10.0.0.6:7000", "10.0.0.1:7000", why) == dial_table::learned::added);
  CHECK(t.learn("10.0.0.7:7000", "10.0.0.1:7000", why) == dial_table::learned::full);
  CHECK(t.learn("nonsense", "10.0.0.1:7000", why) == dial_table::learned::invalid);
  CHECK_FALSE(t.failed("10.0.0.5:7000", "x", t0));
  CHECK_FALSE(t.failed("10.0.0.5:7000", "x", t0));
  t.succeeded("10.0.0.5:7000"); // in a row: a success starts the count again
  CHECK_FALSE(t.failed("10.0.0.5:7000", "x", t0));
  CHECK_FALSE(t.failed("10.0.0.5:7000", "x", t0));
  CHECK(t.failed("10.0.0.5:7000", "x", t0));
  CHECK(t.find("10.0.0.5:7000") == nullptr);
  CHECK(t.dropped() == 1);
  CHECK(t.learn("10.0.0.7:7000", "10.0.0.1:7000", why) == dial_table::learned::added);
}

TEST_CASE("an address that is this node is never dialed again; one announced is hurried") {
  auto t = table();
  std::string why;
  auto t0 = clock_type::time_point{} + 1h;
  t.add_seed("10.0.0.2:7000", why);
  t.learn("10.0.0.5:7000", "", why);
  t.due(t0, none_linked);
  t.mark_self("10.0.0.2:7000");
  t.failed("10.0.0.5:7000", "x", t0);
  CHECK(t.due(t0 + 1h, none_linked) == std::vector<std::string>{"10.0.0.5:7000"});
  t.failed("10.0.0.5:7000", "x", t0 + 1h);
  t.hurry("10.0.0.5:7000", t0 + 1h);
  CHECK(t.due(t0 + 1h, none_linked) == std::vector<std::string>{"10.0.0.5:7000"});
}
