#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>
#include <map>

using namespace troupe;
using namespace troupe::actors;
using test::policy_fixture;

TEST_CASE("least load: the candidate with fewest requests in flight, fleet-wide") {
  policy_fixture f{"least_load", {}, 3};
  f.fleet.at("w0").live->in_flight = 2;
  f.fleet.at("w1").live->in_flight = 1;
  f.fleet.at("w2").live->in_flight = 0;
  f.fleet.at("w2").live->remote_in_flight = 3; // another gateway node's requests count
  CHECK(f.pick(selection{}) == "w1");
}

TEST_CASE("least load: ties are broken at random, not by position") {
  policy_fixture f{"least_load", {}, 4};
  std::map<std::string, int> count;
  for (int i = 0; i < 400; ++i) {
    ++count[f.pick(selection{})];
  }
  REQUIRE(count.size() == 4);
  for (auto& [_, n] : count) {
    CHECK(n > 50);
  }
}

TEST_CASE("least load: workers at --least-load-max-waiting-requests are skipped; all there: 503") {
  policy_config cfg;
  cfg.least_load_max_waiting_requests = 2;
  policy_fixture f{"least_load", cfg, 2};
  f.fleet.at("w0").live->in_flight = 2;
  f.fleet.at("w1").live->in_flight = 1;
  CHECK(f.pick(selection{}) == "w1");
  f.fleet.at("w1").live->in_flight = 2;
  CHECK(f.pick(selection{}) == "error:no_worker_available");
  CHECK(f.state()["refused_at_cap"] == 1);
}

TEST_CASE("least load: a group larger than its sample never goes to a busy worker while "
          "idle ones are drawn, and spreads over every idle one") {
  // 200 workers, half busy: a pick looks at 32 random draws (all busy with p = 2^-32) and takes
  // the first idle one of them, which is uniform over the idle workers without a tie draw.
  policy_fixture f{"least_load", {}, 200};
  for (int i = 0; i < 200; i += 2) {
    f.fleet.at("w" + std::to_string(i)).live->in_flight = 1;
  }
  std::map<std::string, int> count;
  for (int i = 0; i < 4000; ++i) {
    ++count[f.pick(selection{})];
  }
  CHECK(count.size() == 100); // every idle worker, ~40 picks each
  for (auto& [id, n] : count) {
    INFO(id);
    CHECK(std::stoi(id.substr(1)) % 2 == 1);
    CHECK(n >= 10);
    CHECK(n <= 100);
  }
}
