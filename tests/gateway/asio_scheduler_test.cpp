#include "gateway/asio_scheduler.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

using namespace std::chrono_literals;

namespace {

/// An actor system whose actors and timeouts run on an io_context (gateway::asio_scheduler),
/// the io_context run by one thread, stopped as the gateway stops it (io_context first, then
/// the system).
struct asio_system {
  boost::asio::io_context ioc{1};
  caf::actor_system_config cfg;
  troupe::gateway::asio_scheduler scheduler{cfg, ioc};
  std::unique_ptr<caf::actor_system> sys;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{ioc.get_executor()};
  std::thread runner;

  asio_system() {
    sys = std::make_unique<caf::actor_system>(cfg);
    runner = std::thread([this] { ioc.run(); });
  }

  ~asio_system() {
    work.reset();
    ioc.stop();
    runner.join();
    scheduler.hand_back();
    sys->await_actors_before_shutdown(false);
    sys.reset();
  }
};

/// Spawns an actor whose `after(delay)` fulfils `fired` unless the actor ended first; it ends
/// on any message.
caf::actor waiter(caf::actor_system& sys, std::chrono::milliseconds delay,
                  std::shared_ptr<std::promise<void>> fired) {
  return sys.spawn([delay, fired](caf::event_based_actor* self) -> caf::behavior {
    return {
        [self](int) { self->quit(); },
        caf::after(delay) >>
            [self, fired] {
              fired->set_value();
              self->quit();
            },
    };
  });
}

/// Waits an hour for its timeout, ends on any message, and says when it is destroyed.
class probe : public caf::event_based_actor {
public:
  probe(caf::actor_config& cfg, std::shared_ptr<std::promise<void>> gone)
      : caf::event_based_actor(cfg), gone_(std::move(gone)) {}

  ~probe() override { gone_->set_value(); }

  caf::behavior make_behavior() override {
    return {
        [this](int) { quit(); },
        caf::after(std::chrono::seconds{3600}) >> [] {},
    };
  }

private:
  std::shared_ptr<std::promise<void>> gone_;
};

} // namespace

TEST_CASE("the asio clock fires a waiting actor's timeout, whoever else ended meanwhile") {
  asio_system s;
  auto fired = std::make_shared<std::promise<void>>();
  auto done = fired->get_future();
  waiter(*s.sys, 100ms, fired);
  // Actors without a timeout of their own end meanwhile: their ends cancel nothing of it.
  for (int i = 0; i < 50; ++i) {
    auto quick = s.sys->spawn([](caf::event_based_actor* self) -> caf::behavior {
      return {[self](int) { self->quit(); }};
    });
    caf::anon_send(quick, 1);
  }
  CHECK(done.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("the asio clock lets go of an actor that ended while its timeout waited") {
  asio_system s;
  // The clock holds a strong reference to an actor while its timeout waits: only cancelling
  // the timeout at the actor's end lets the actor go before the hour is up.
  auto gone = std::make_shared<std::promise<void>>();
  auto destroyed = gone->get_future();
  {
    auto a = s.sys->spawn<probe>(gone);
    caf::anon_send(a, 1);
  }
  CHECK(destroyed.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("the asio clock lets go of an older waiting actor after a newer one set a timeout") {
  asio_system s;
  // An actor's end skips the clock when no actor as new as it ever set a timeout. The older
  // probe is not the newest that did, so its end must still reach the schedule, and the newest
  // (its id the mark itself) too.
  auto older_gone = std::make_shared<std::promise<void>>();
  auto newer_gone = std::make_shared<std::promise<void>>();
  auto older_destroyed = older_gone->get_future();
  auto newer_destroyed = newer_gone->get_future();
  caf::actor newer;
  {
    auto older = s.sys->spawn<probe>(older_gone);
    newer = s.sys->spawn<probe>(newer_gone);
    REQUIRE(older.id() < newer.id());
    caf::anon_send(older, 1);
  }
  CHECK(older_destroyed.wait_for(5s) == std::future_status::ready);
  // Actors without a timeout, newer than both, end meanwhile.
  for (int i = 0; i < 10; ++i) {
    auto quick = s.sys->spawn([](caf::event_based_actor* self) -> caf::behavior {
      return {[self](int) { self->quit(); }};
    });
    caf::anon_send(quick, 1);
  }
  CHECK(newer_destroyed.wait_for(0s) == std::future_status::timeout);
  caf::anon_send(newer, 1);
  newer = caf::actor{};
  CHECK(newer_destroyed.wait_for(5s) == std::future_status::ready);
}

TEST_CASE("the asio clock ends a request that gets no answer in time with request_timeout") {
  asio_system s;
  auto mute = s.sys->spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](int) -> caf::result<int> { return caf::delegated<int>{}; }};
  });
  auto outcome = std::make_shared<std::promise<caf::error>>();
  auto got = outcome->get_future();
  s.sys->spawn([mute, outcome](caf::event_based_actor* self) {
    self->request(mute, 100ms, 1)
        .then([outcome](int) { outcome->set_value(caf::error{}); },
              [outcome](caf::error& err) { outcome->set_value(std::move(err)); });
  });
  REQUIRE(got.wait_for(5s) == std::future_status::ready);
  CHECK(got.get() == caf::sec::request_timeout);
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}
