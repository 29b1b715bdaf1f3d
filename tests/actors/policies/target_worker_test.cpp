#include "tests/actors/policies/policy_fixture.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::actors;
using test::policy_fixture;

namespace {

selection target(std::string t) {
  selection sel;
  sel.target = std::move(t);
  return sel;
}

} // namespace

TEST_CASE("target worker: named by id, URL or index, whatever the policy would pick") {
  for (auto strategy : {"round_robin", "cache_aware", "manual", "least_load"}) {
    policy_fixture f{strategy, {}, 3};
    for (int i = 0; i < 3; ++i) {
      CHECK(f.pick(target("w1")) == "w1");
      CHECK(f.pick(target("http://w2:8000")) == "w2");
      CHECK(f.pick(target("0")) == "w0"); // smg's form: the index, registration order
    }
    CHECK(f.state().is_object());
  }
}

TEST_CASE("target worker: one that cannot take the request is a 503, not another worker") {
  policy_fixture f{"round_robin", {}, 3};
  f.fleet.at("w1").live->health = health_state::unhealthy;
  CHECK(f.pick(target("w1")) == "error:no_worker_available");
  CHECK_THAT(f.last_error, Catch::Contains("w1") && Catch::Contains("unhealthy"));
  selection tried = target("w2");
  tried.exclude = {"w2"}; // it failed this request already
  CHECK(f.pick(tried) == "error:no_worker_available");
  CHECK_THAT(f.last_error, Catch::Contains("failed this request already"));
}

TEST_CASE("target worker: a name that matches no worker is the client's error") {
  policy_fixture f{"round_robin", {}, 2};
  CHECK(f.pick(target("w9")) == "error:bad_request");
  CHECK_THAT(f.last_error, Catch::Contains("names no regular worker serving model 'm'"));
  CHECK(f.pick(target("2")) == "error:bad_request"); // past the last index
}

TEST_CASE("target worker: a worker of the other PD half is that half's to honour") {
  policy_fixture f{"round_robin", {}, 2};
  f.fleet.add("p0").spec.type = protocol::worker_type::prefill;
  f.publish();
  // The regular (here: decode-like) policy picks as usual when the target is a prefill worker.
  auto w = f.pick(target("p0"));
  CHECK((w == "w0" || w == "w1"));
}
