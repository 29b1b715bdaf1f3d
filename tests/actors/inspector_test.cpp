#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "actors/inspector.hpp"
#include "tests/fakes/actor_system.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <vector>

using namespace troupe;
using namespace troupe::actors;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// The inspector on a deterministic actor system, and fake actors for it to inspect.
struct inspector_fixture : test::actor_system_fixture {
  /// An actor answering inspections with a fixed state, or never (`stuck`); counts the asks
  /// for its state in `asked` and those for its mailbox size alone in `sized` (when given).
  inspectable_actor fake(std::string name, std::shared_ptr<int> asked, bool stuck = false,
                         std::shared_ptr<int> sized = std::make_shared<int>(0)) {
    return keep(sys.spawn([=](inspectable_actor::pointer self) -> inspectable_actor::behavior_type {
      auto held = std::make_shared<std::vector<caf::typed_response_promise<std::string>>>();
      auto held_sizes = std::make_shared<std::vector<caf::typed_response_promise<std::uint64_t>>>();
      return {
          [=](inspect_atom, mailbox_atom) -> caf::result<std::uint64_t> {
            ++*sized;
            if (stuck) {
              held_sizes->push_back(self->make_response_promise<std::uint64_t>());
              return held_sizes->back();
            }
            return std::uint64_t{5}; // unlike the state's 3: a test sees which ask set a gauge
          },
          [=](inspect_atom) -> caf::result<std::string> {
            ++*asked;
            if (stuck) {
              held->push_back(self->make_response_promise<std::string>());
              return held->back();
            }
            return json{{"kind", "fake"},      {"name", name}, {"id", self->id()},
                        {"mailbox_size", 3},   {"answer", 42}, {"models", {"a", "b"}},
                        {"nested", {{"x", 1}}}}
                .dump();
          },
      };
    }));
  }

  /// The inspector's own state (`GET /admin/actors/{its id}` → `state`).
  json own_state(const inspector_actor& insp) {
    auto own = ask_later(insp, inspect_atom_v, insp->id());
    run();
    return json::parse(**own)["state"];
  }

  inspector_actor inspector(inspector_config c, std::shared_ptr<services::metrics> m = nullptr) {
    return keep(make_inspector(sys, c, std::move(m)));
  }

  /// Asks `dest` and returns where the answer (or "error:<code>") will be.
  template <class... Ts>
  std::shared_ptr<std::optional<std::string>> ask_later(const inspector_actor& dest, Ts... xs) {
    auto out = std::make_shared<std::optional<std::string>>();
    actors::ask(
        sys, dest, [out](const std::string& s) { *out = s; },
        [out](caf::error& e) {
          *out = "error:" + std::string(protocol::to_string(to_api_error(e).code));
        },
        xs...);
    return out;
  }
};

inspector_config quick(std::size_t max_outstanding = 16) {
  inspector_config c;
  c.timeout = 1000ms;
  c.max_outstanding = max_outstanding;
  c.refresh_interval = 0ms;
  return c;
}

json by_name(const json& listing, const std::string& name) {
  for (auto& e : listing) {
    if (e["name"] == name) {
      return e;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE_METHOD(inspector_fixture,
                 "a listing shows every registered actor with a scalar summary") {
  auto asked = std::make_shared<int>(0);
  auto insp = inspector(quick());
  auto a = fake("fake-a", asked);
  auto b = fake("fake-b", asked);
  register_with(insp, "fake", "fake-a", a);
  register_with(insp, "fake", "fake-b", b);
  run();

  auto out = ask_later(insp, list_atom_v);
  run();
  REQUIRE(out->has_value());
  auto listing = json::parse(**out);
  REQUIRE(listing.size() == 3); // the inspector itself, then the two
  CHECK(listing[0]["kind"] == "inspector");
  auto ea = by_name(listing, "fake-a");
  REQUIRE(ea.is_object());
  CHECK(ea["id"] == a->id());
  CHECK(ea["kind"] == "fake");
  CHECK(ea["status"] == "ok");
  CHECK(ea["mailbox_size"] == 3);
  CHECK(ea["summary"] == json{{"answer", 42}}); // arrays and objects stay in the full state
  CHECK(*asked == 2);
}

TEST_CASE_METHOD(inspector_fixture, "a listing by kind and limit asks only the actors it lists") {
  auto asked = std::make_shared<int>(0);
  auto insp = inspector(quick());
  std::vector<inspectable_actor> fakes;
  for (int i = 0; i < 4; ++i) {
    auto name = "proxy-" + std::to_string(i);
    fakes.push_back(fake(name, asked));
    register_with(insp, i == 2 ? "policy" : "proxy", name, fakes.back());
  }
  run();

  using answer = std::tuple<std::string, std::uint64_t, std::uint64_t>;
  auto list = [&](std::vector<std::string> kinds, std::uint64_t limit) {
    auto out = std::make_shared<std::optional<answer>>();
    actors::ask(
        sys, insp,
        [out](const std::string& s, std::uint64_t registered, std::uint64_t matched) {
          *out = answer{s, registered, matched};
        },
        [](caf::error&) {}, list_atom_v, std::move(kinds), limit);
    run();
    REQUIRE(out->has_value());
    return **out;
  };
  auto names = [](const std::string& s) {
    std::vector<std::string> out;
    for (auto& e : json::parse(s)) {
      out.push_back(e["name"]);
    }
    return out;
  };

  auto [all, registered, matched] = list({}, 0);
  CHECK(names(all) ==
        std::vector<std::string>{"inspector", "proxy-0", "proxy-1", "proxy-2", "proxy-3"});
  CHECK(registered == 5);
  CHECK(matched == 5);
  CHECK(*asked == 4);

  auto [proxies, r2, m2] = list({"proxy"}, 2);
  CHECK(names(proxies) == std::vector<std::string>{"proxy-0", "proxy-1"}); // in id order
  CHECK(r2 == 5);
  CHECK(m2 == 3);
  CHECK(*asked == 6); // the two listed, no more

  auto [first, r3, m3] = list({}, 2);
  CHECK(names(first) == std::vector<std::string>{"inspector", "proxy-0"});
  CHECK(m3 == 5);
  CHECK(*asked == 7);

  auto [policies, r4, m4] = list({"policy", "inspector"}, 0);
  CHECK(names(policies) == std::vector<std::string>{"inspector", "proxy-2"});
  CHECK(m4 == 2);

  auto [none, r5, m5] = list({"nobody"}, 0);
  CHECK(json::parse(none).empty());
  CHECK(m5 == 0);
}

TEST_CASE_METHOD(inspector_fixture, "one actor's full state keeps its structured fields") {
  auto asked = std::make_shared<int>(0);
  auto insp = inspector(quick());
  auto a = fake("fake-a", asked);
  register_with(insp, "fake", "fake-a", a);
  run();

  auto out = ask_later(insp, inspect_atom_v, a->id());
  run();
  REQUIRE(out->has_value());
  auto detail = json::parse(**out);
  CHECK(detail["status"] == "ok");
  CHECK(detail["name"] == "fake-a");
  CHECK(detail["state"]["models"] == json{"a", "b"});
  CHECK(detail["state"]["nested"]["x"] == 1);

  auto missing = ask_later(insp, inspect_atom_v, caf::actor_id{999999});
  run();
  CHECK(**missing == "error:not_found");

  CHECK(own_state(insp)["registered"] == 1);
}

TEST_CASE_METHOD(inspector_fixture, "a stuck actor times out without holding the others back") {
  auto asked = std::make_shared<int>(0);
  auto stuck_asked = std::make_shared<int>(0);
  auto insp = inspector(quick());
  auto good = fake("good", asked);
  auto stuck = fake("stuck", stuck_asked, true);
  register_with(insp, "fake", "good", good);
  register_with(insp, "fake", "stuck", stuck);
  run();

  auto out = ask_later(insp, list_atom_v);
  run();
  CHECK_FALSE(out->has_value()); // waiting for the stuck one, nothing else
  CHECK(*asked == 1);
  CHECK(*stuck_asked == 1);

  advance(1000ms);
  REQUIRE(out->has_value());
  auto listing = json::parse(**out);
  CHECK(by_name(listing, "good")["status"] == "ok");
  auto s = by_name(listing, "stuck");
  CHECK(s["status"] == "timeout");
  CHECK(s["mailbox_size"].is_null());
  CHECK(s["error"] == "no answer within 1000 ms");
}

TEST_CASE_METHOD(inspector_fixture,
                 "asks for the same actor are merged: a stuck actor gets one message") {
  auto stuck_asked = std::make_shared<int>(0);
  auto insp = inspector(quick());
  auto stuck = fake("stuck", stuck_asked, true);
  register_with(insp, "fake", "stuck", stuck);
  run();

  auto first = ask_later(insp, list_atom_v);
  auto second = ask_later(insp, list_atom_v);
  auto third = ask_later(insp, inspect_atom_v, stuck->id());
  run();
  CHECK(*stuck_asked == 1);

  advance(1000ms);
  REQUIRE(first->has_value());
  REQUIRE(second->has_value());
  REQUIRE(third->has_value());
  CHECK(by_name(json::parse(**second), "stuck")["status"] == "timeout");
  CHECK(json::parse(**third)["status"] == "timeout");
}

TEST_CASE_METHOD(inspector_fixture, "no more than max_outstanding inspections run at once") {
  auto asked = std::make_shared<int>(0);
  auto insp = inspector(quick(2));
  for (int i = 0; i < 5; ++i) {
    auto name = "stuck-" + std::to_string(i);
    register_with(insp, "fake", name, fake(name, asked, true));
  }
  run();

  auto out = ask_later(insp, list_atom_v);
  run();
  CHECK(*asked == 2);
  advance(1000ms);
  CHECK(*asked == 4);
  advance(1000ms);
  CHECK(*asked == 5);
  CHECK_FALSE(out->has_value());
  advance(1000ms);
  REQUIRE(out->has_value());
  CHECK(json::parse(**out).size() == 6);
}

TEST_CASE_METHOD(inspector_fixture,
                 "terminated and deregistered actors leave the listing and the gauges") {
  auto asked = std::make_shared<int>(0);
  auto m = std::make_shared<services::metrics>();
  auto insp = inspector(quick(), m);
  auto a = fake("fake-a", asked);
  auto b = fake("fake-b", asked);
  register_with(insp, "fake", "fake-a", a);
  register_with(insp, "fake", "fake-b", b);
  run();
  auto out = ask_later(insp, list_atom_v);
  run();
  auto text = m->scrape();
  CHECK(text.find("troupe_actor_mailbox_size{actor=\"fake-a\"} 3") != std::string::npos);
  CHECK(text.find("troupe_actor_mailbox_size{actor=\"fake-b\"} 3") != std::string::npos);

  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  deregister_from(insp, b);
  run();
  auto after = ask_later(insp, list_atom_v);
  run();
  REQUIRE(after->has_value());
  CHECK(json::parse(**after).size() == 1);
  text = m->scrape();
  CHECK(text.find("actor=\"fake-a\"") == std::string::npos);
  CHECK(text.find("actor=\"fake-b\"") == std::string::npos);
}

TEST_CASE_METHOD(inspector_fixture,
                 "mailbox gauges refresh on their own interval, asking the size alone") {
  auto asked = std::make_shared<int>(0);
  auto sized = std::make_shared<int>(0);
  auto m = std::make_shared<services::metrics>();
  auto c = quick();
  c.refresh_interval = 5000ms;
  auto insp = inspector(c, m);
  register_with(insp, "fake", "fake-a", fake("fake-a", asked, false, sized));
  run();
  CHECK(*sized == 0);
  CHECK(m->scrape().find("actor=\"fake-a\"") == std::string::npos);

  advance(5000ms);
  CHECK(*sized == 1);
  CHECK(*asked == 0); // no JSON state built for a gauge
  CHECK(m->scrape().find("troupe_actor_mailbox_size{actor=\"fake-a\"} 5") != std::string::npos);
  advance(5000ms);
  CHECK(*sized == 2);
  CHECK(*asked == 0);

  CHECK(own_state(insp)["gauge_reads_total"] == 2);
}

TEST_CASE_METHOD(inspector_fixture,
                 "a gauge refresh shares the slots and skips an actor being inspected") {
  auto asked = std::make_shared<int>(0);
  auto sized = std::make_shared<int>(0);
  auto m = std::make_shared<services::metrics>();
  auto c = quick(2);
  c.refresh_interval = 5000ms;
  auto insp = inspector(c, m);
  auto stuck = fake("stuck", asked, true, sized);
  register_with(insp, "fake", "stuck", stuck);
  for (int i = 0; i < 3; ++i) {
    auto name = "quick-" + std::to_string(i);
    register_with(insp, "fake", name, fake(name, std::make_shared<int>(0), false, sized));
  }
  run();

  // Just before the refresh, the admin asks for the stuck actor's state: its full inspection
  // holds one of the two slots until it times out at 5,500 ms.
  advance(4500ms);
  auto detail = ask_later(insp, inspect_atom_v, stuck->id());
  run();
  CHECK(*asked == 1);

  // The refresh reads the three others' sizes through the one free slot, not the stuck one's.
  advance(500ms);
  CHECK(*sized == 3);
  auto text = m->scrape();
  for (int i = 0; i < 3; ++i) {
    auto line = "troupe_actor_mailbox_size{actor=\"quick-" + std::to_string(i) + "\"} 5";
    CHECK(text.find(line) != std::string::npos);
  }
  CHECK(text.find("actor=\"stuck\"") == std::string::npos);
  CHECK_FALSE(detail->has_value());

  advance(500ms);
  REQUIRE(detail->has_value());
  CHECK(json::parse(**detail)["status"] == "timeout");

  // The next refresh asks the stuck actor's size too; that read times out and is counted.
  advance(4500ms);
  CHECK(*sized == 7);
  advance(1000ms);
  auto st = own_state(insp);
  CHECK(st["timeouts_total"] == 2);
  CHECK(st["gauge_reads_total"] == 7);
  CHECK(st["outstanding"] == 0);
}
