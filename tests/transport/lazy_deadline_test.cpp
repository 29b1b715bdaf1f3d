#include "tests/transport/loopback.hpp"
#include "transport/lazy_deadline.hpp"

#include <atomic>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <future>

using namespace troupe;
using namespace troupe::transport;
using test::io_thread;
using namespace std::chrono_literals;

namespace {

/// Counts its deadlines.
struct counting_target : lazy_deadline::target {
  void on_deadline() override { ++calls; }
  std::atomic<int> calls{0};
};

/// Runs `f` on `io`'s thread and waits for it.
template <class F> void on_io(io_thread& io, F f) {
  std::promise<void> done;
  boost::asio::post(io.ioc, [&] {
    f();
    done.set_value();
  });
  done.get_future().wait();
}

} // namespace

TEST_CASE("a watched target hears of its deadline once it passes, once") {
  io_thread io;
  lazy_deadline d{io.ioc.get_executor()};
  auto t = std::make_shared<counting_target>();
  on_io(io, [&] { d.watch(lazy_deadline::clock::now() + 50ms, t); });
  std::this_thread::sleep_for(300ms);
  CHECK(t->calls == 1);
  on_io(io, [&] { CHECK_FALSE(d.armed()); });
}

TEST_CASE("a deadline moved later is kept without re-arming, and still ends the target") {
  io_thread io;
  lazy_deadline d{io.ioc.get_executor()};
  auto first = std::make_shared<counting_target>();
  auto second = std::make_shared<counting_target>();
  on_io(io, [&] {
    d.watch(lazy_deadline::clock::now() + 50ms, first);
    d.watch(lazy_deadline::clock::now() + 250ms, second); // the next exchange, due later
  });
  std::this_thread::sleep_for(150ms);
  CHECK(first->calls == 0);  // no longer watched
  CHECK(second->calls == 0); // the timer rang at 50 ms for nothing and re-armed
  std::this_thread::sleep_for(400ms);
  CHECK(second->calls == 1);
}

TEST_CASE("a sooner deadline re-arms the timer at once") {
  io_thread io;
  lazy_deadline d{io.ioc.get_executor()};
  auto t = std::make_shared<counting_target>();
  on_io(io, [&] {
    d.watch(lazy_deadline::clock::now() + 30s, t);
    d.watch(lazy_deadline::clock::now() + 50ms, t);
  });
  std::this_thread::sleep_for(400ms);
  CHECK(t->calls == 1);
}

TEST_CASE("a cleared target hears nothing") {
  io_thread io;
  lazy_deadline d{io.ioc.get_executor()};
  auto t = std::make_shared<counting_target>();
  on_io(io, [&] {
    d.watch(lazy_deadline::clock::now() + 50ms, t);
    d.clear(); // the exchange ended; the connection went back to the pool
  });
  std::this_thread::sleep_for(300ms);
  CHECK(t->calls == 0);
}

TEST_CASE("a deadline destroyed before it passes calls nothing") {
  io_thread io;
  auto t = std::make_shared<counting_target>();
  {
    lazy_deadline d{io.ioc.get_executor()};
    on_io(io, [&] { d.watch(lazy_deadline::clock::now() + 50ms, t); });
    on_io(io, [] {}); // the connection is closed and destroyed on its thread
  }
  std::this_thread::sleep_for(300ms);
  CHECK(t->calls == 0);
}
