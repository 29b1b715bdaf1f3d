#include "transport/dispatch_inline.hpp"

#include <atomic>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

using namespace troupe::transport;
namespace net = boost::asio;

TEST_CASE("runs_here: a strand runs here only inside its own handlers") {
  net::io_context ioc{2};
  net::any_io_executor mine{net::make_strand(ioc)};
  net::any_io_executor other{net::make_strand(ioc)};
  net::any_io_executor plain{ioc.get_executor()};
  std::vector<bool> seen;
  net::post(mine, [&] {
    seen.push_back(runs_here(mine));  // its own handler
    seen.push_back(runs_here(other)); // another strand's: not held here
    seen.push_back(runs_here(plain)); // the io_context's: any of its threads
  });
  net::post(plain, [&] {
    // An io thread outside every strand (the check Boost 1.74's unchecked
    // `any_executor::target` got wrong: it read a strand as the io executor it wraps).
    seen.push_back(runs_here(mine));
    seen.push_back(runs_here(plain));
  });
  ioc.run();
  REQUIRE(seen == std::vector<bool>{true, false, true, false, true});
  // Outside any handler, nothing runs here.
  CHECK_FALSE(runs_here(mine));
  CHECK_FALSE(runs_here(plain));
}

TEST_CASE("dispatch_inline: in place on its own strand") {
  net::io_context ioc{1};
  net::any_io_executor session{net::make_strand(ioc)};
  std::vector<int> order;
  net::post(session, [&] {
    dispatch_inline(session, [&] { order.push_back(1); });
    order.push_back(2);
  });
  ioc.run();
  CHECK(order == std::vector<int>{1, 2});
}

TEST_CASE("dispatch_inline waits for a strand busy on another io thread") {
  // A worker's answer (an upstream strand's handler) delivered to a client connection whose
  // strand another io thread holds: it runs once that handler is done, never alongside it.
  net::io_context ioc{2};
  net::any_io_executor session{net::make_strand(ioc)};
  net::any_io_executor upstream{net::make_strand(ioc)};
  std::atomic<int> stage{0};
  std::atomic<bool> session_busy{false};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> delivered{false};
  auto wait_for = [&](int s) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (stage.load() < s && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    return stage.load() >= s;
  };
  bool session_saw_stage = false;
  bool upstream_saw_stage = false;
  net::post(session, [&] {
    session_busy = true;
    stage = 1;
    session_saw_stage = wait_for(2); // the delivery was asked for meanwhile
    session_busy = false;
  });
  net::post(upstream, [&] {
    upstream_saw_stage = wait_for(1); // the session's handler runs on the other thread
    dispatch_inline(session, [&] {
      overlapped = session_busy.load();
      delivered = true;
    });
    stage = 2;
  });
  std::thread second{[&] { ioc.run(); }};
  ioc.run();
  second.join();
  REQUIRE(session_saw_stage);
  REQUIRE(upstream_saw_stage);
  CHECK(delivered);
  CHECK_FALSE(overlapped);
}
