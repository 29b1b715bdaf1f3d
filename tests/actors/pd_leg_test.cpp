#include "actors/pd_leg.hpp"
#include "tests/fakes/actor_system.hpp"
#include "tests/fakes/fake_actors.hpp"
#include "transport/collect_sink.hpp"

#include <caf/event_based_actor.hpp>
#include <catch2/catch.hpp>

using namespace troupe;
using namespace troupe::actors;
using protocol::worker_type;
using transport::exchange_result;
using transport::exchange_status;

namespace {

/// A leg whose parent is a small actor standing in for the request actor: `dispatch` and
/// `cancel` sent to the parent go to the leg; the parent records the leg's `down_msg`.
struct pd_leg_fixture : test::actor_system_fixture {
  test::fake_worker worker{sys, "p1", worker_type::prefill, {"m"}};
  std::shared_ptr<transport::collect_sink> sink = std::make_shared<transport::collect_sink>(1024);
  std::shared_ptr<bool> leg_down = std::make_shared<bool>(false);
  caf::actor parent;

  pd_leg_fixture() {
    keep(worker.entry()->proxy);
    pd_leg_spec spec;
    spec.role = worker_type::prefill;
    spec.worker = worker.entry();
    spec.call.target = "/generate";
    spec.call.body = R"({"text":"hi"})";
    spec.sink = sink;
    spec.request_id = "rid-1";
    auto down = leg_down;
    parent = sys.spawn([spec, down](caf::event_based_actor* self) mutable -> caf::behavior {
      auto leg = spawn_pd_leg(self, std::move(spec));
      self->set_down_handler([down](caf::down_msg&) { *down = true; });
      return {
          [self, leg](dispatch_atom) { return self->delegate(leg, dispatch_atom_v); },
          [self, leg](cancel_atom) { self->send(leg, cancel_atom_v); },
      };
    });
    run();
  }

  ~pd_leg_fixture() {
    if (parent) {
      caf::anon_send_exit(parent, caf::exit_reason::user_shutdown);
    }
    shutdown();
  }
};

} // namespace

TEST_CASE_METHOD(pd_leg_fixture,
                 "a leg sends its call through its worker's proxy and answers with the "
                 "outcome") {
  auto answer = ask_later<exchange_result>(parent, dispatch_atom_v);
  run();
  REQUIRE(worker.orders() == 1);
  CHECK(worker.order().call.target == "/generate");
  CHECK(worker.order().call.body == R"({"text":"hi"})");
  CHECK(worker.order().sink == sink);
  CHECK_FALSE(*answer);
  worker.respond(0, 200, R"({"ok":true})");
  run();
  REQUIRE(*answer);
  REQUIRE(**answer);
  CHECK((**answer)->http_status == 200);
  CHECK(sink->body() == R"({"ok":true})");
  CHECK(*leg_down); // the leg stops once its exchange is over
}

TEST_CASE_METHOD(pd_leg_fixture, "a leg cancelled before it was sent answers cancelled and sends "
                                 "nothing") {
  caf::anon_send(parent, cancel_atom_v);
  run();
  auto r = ask<exchange_result>(parent, dispatch_atom_v);
  REQUIRE(r);
  CHECK(r->status == exchange_status::cancelled);
  CHECK(worker.orders() == 0);
  CHECK(*leg_down);
}

TEST_CASE_METHOD(pd_leg_fixture, "cancelling a leg in flight cancels its exchange") {
  auto answer = ask_later<exchange_result>(parent, dispatch_atom_v);
  run();
  REQUIRE(worker.orders() == 1);
  caf::anon_send(parent, cancel_atom_v);
  run();
  CHECK(worker.cancelled(0));
  REQUIRE(*answer);
  REQUIRE(**answer);
  CHECK((**answer)->status == exchange_status::cancelled);
}

TEST_CASE_METHOD(pd_leg_fixture, "a leg whose request actor died cancels its order and stops") {
  ask_later<exchange_result>(parent, dispatch_atom_v);
  run();
  REQUIRE(worker.orders() == 1);
  caf::anon_send_exit(parent, caf::exit_reason::kill);
  parent = nullptr;
  run();
  CHECK(worker.cancelled(0)); // the worker's load is released
  CHECK(worker.order().ended);
}
