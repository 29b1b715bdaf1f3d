#include "actors/fleet.hpp"
#include "services/metrics.hpp"
#include "tests/fakes/scrape.hpp"

#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::actors;
using test::sample;

TEST_CASE("worker gauges are read from the fleet snapshot when scraped") {
  auto view = std::make_shared<fleet_view>();
  auto snap = std::make_shared<fleet_snapshot>();
  auto w = std::make_shared<worker_entry>();
  w->id = "w-1";
  w->spec.url = "http://10.0.0.1:8000";
  w->live = std::make_shared<worker_live>();
  snap->workers.push_back(w);
  view->set(snap);
  services::metrics m;
  watch_fleet(m, view);
  auto text = m.scrape();
  const std::string lbl = R"({worker="http://10.0.0.1:8000"})";
  CHECK(sample(text, "troupe_worker_requests_active" + lbl) == 0);
  CHECK(sample(text, "troupe_worker_health" + lbl) == 0);
  CHECK(sample(text, "troupe_worker_cb_state" + lbl) == 0);

  w->live->in_flight = 4;
  w->live->health = health_state::healthy;
  w->live->breaker = breaker_state::half_open;
  text = m.scrape();
  CHECK(sample(text, "troupe_worker_requests_active" + lbl) == 4);
  CHECK(sample(text, "troupe_worker_health" + lbl) == 1);
  CHECK(sample(text, "troupe_worker_cb_state" + lbl) == 2);

  view->set(std::make_shared<fleet_snapshot>()); // removed: its series go with it
  CHECK(sample(m.scrape(), "troupe_worker_requests_active" + lbl) == -1);
}
