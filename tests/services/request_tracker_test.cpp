#include "services/request_tracker.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace troupe::services;
using namespace std::chrono_literals;

TEST_CASE("each request is tracked by its own ticket", "[request_tracker]") {
  request_tracker tracker;
  auto a = tracker.begin("req-1", "chat");
  auto b = tracker.begin("req-2", "messages");
  CHECK(a);
  CHECK(b != a);
  tracker.update(a, request_phase::dispatched);
  tracker.set_model(a, "m");
  tracker.add_worker(a, "w-1");
  tracker.add_worker(a, "w-2");
  auto list = tracker.list(0ms);
  REQUIRE(list.size() == 2);
  auto& first = list[0]["id"] == "req-1" ? list[0] : list[1];
  CHECK(first["route"] == "chat");
  CHECK(first["model"] == "m");
  CHECK(first["phase"] == "dispatched");
  CHECK(first["workers"] == nlohmann::json::array({"w-1", "w-2"}));
  tracker.end(a);
  CHECK(tracker.size() == 1);
  CHECK(tracker.list(0ms)[0]["id"] == "req-2");
}

TEST_CASE("two requests with the same client request id are both tracked until each ends",
          "[request_tracker]") {
  // A client may send one x-request-id twice (a retrying SDK, a proxy that fixes it): the
  // first one's end must not drop the second from the in-flight count.
  request_tracker tracker;
  auto first = tracker.begin("same", "chat");
  auto second = tracker.begin("same", "chat");
  tracker.update(second, request_phase::streaming);
  CHECK(tracker.size() == 2);
  tracker.end(first);
  CHECK(tracker.size() == 1);
  auto list = tracker.list(0ms);
  REQUIRE(list.size() == 1);
  CHECK(list[0]["id"] == "same");
  CHECK(list[0]["phase"] == "streaming");
  tracker.end(second);
  CHECK(tracker.size() == 0);
}

TEST_CASE("an ended or unknown ticket changes nothing", "[request_tracker]") {
  request_tracker tracker;
  auto t = tracker.begin("r", "chat");
  tracker.end(t);
  tracker.update(t, request_phase::streaming);
  tracker.set_model(t, "m");
  tracker.add_worker(t, "w");
  tracker.end(t);
  tracker.update(nullptr, request_phase::streaming);
  CHECK(tracker.size() == 0);
  CHECK(tracker.list(0ms).empty());
}

TEST_CASE("a ticket dropped without end stays listed, and the tracker lets go of it at its end",
          "[request_tracker]") {
  // The list holds its entries: a request that never ended shows as one (a leak to find on
  // the admin page), never as a dangling entry.
  std::weak_ptr<request_tracker::entry> seen;
  request_tracker::ticket kept;
  {
    request_tracker tracker;
    auto worker_id = std::make_shared<const std::string>("http://w:1");
    {
      auto t = tracker.begin("dropped", "chat");
      tracker.add_worker(t, worker_id);
      seen = t;
    }
    kept = tracker.begin("kept", "chat");
    REQUIRE(tracker.size() == 2);
    auto list = tracker.list(0ms);
    REQUIRE(list.size() == 2);
    CHECK(list[0]["id"] == "dropped"); // the oldest first
    CHECK(list[0]["workers"] == nlohmann::json::array({"http://w:1"}));
    CHECK(list[1]["id"] == "kept");
    CHECK_FALSE(seen.expired());
  }
  CHECK(seen.expired()); // the tracker's end released the entry nobody else held
  REQUIRE(kept);         // a ticket held elsewhere stays valid
  request_tracker::update(kept, request_phase::streaming);
}
