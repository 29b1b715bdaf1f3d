#include "apps/troupe-sim/room_board.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <optional>

using namespace troupe::sim;
using namespace std::chrono_literals;

TEST_CASE("rooms go from unknown to pending to ready", "[room_board]") {
  boost::asio::io_context ioc;
  room_board board{ioc};
  CHECK(board.state("1") == room_state::unknown);
  board.arrive("1");
  CHECK(board.state("1") == room_state::pending);
  board.ready("1");
  CHECK(board.state("1") == room_state::ready);
  board.arrive("1"); // a late duplicate does not undo readiness
  CHECK(board.state("1") == room_state::ready);
}

TEST_CASE("a wait for a ready room ends at once", "[room_board]") {
  boost::asio::io_context ioc;
  room_board board{ioc};
  board.ready("7");
  std::optional<bool> got;
  auto w = board.wait("7", 1s, [&](bool ready) { got = ready; });
  REQUIRE(got.has_value());
  CHECK(*got);
}

TEST_CASE("a waiter is told when the room becomes ready", "[room_board]") {
  boost::asio::io_context ioc;
  room_board board{ioc};
  std::optional<bool> got;
  auto w = board.wait("9", 10s, [&](bool ready) { got = ready; });
  CHECK_FALSE(got.has_value());
  CHECK(board.waiters() == 1);
  board.ready("9");
  REQUIRE(got.has_value());
  CHECK(*got);
  ioc.run(); // the cancelled timer completes; nothing else fires
  CHECK(*got);
}

TEST_CASE("a wait ends unready after its limit, and cancel silences it", "[room_board]") {
  boost::asio::io_context ioc;
  room_board board{ioc};
  std::optional<bool> first;
  std::optional<bool> second;
  auto a = board.wait("x", 1ms, [&](bool ready) { first = ready; });
  auto b = board.wait("x", 1ms, [&](bool ready) { second = ready; });
  b->cancel();
  ioc.run();
  REQUIRE(first.has_value());
  CHECK_FALSE(*first);
  CHECK_FALSE(second.has_value());
}

TEST_CASE("the board forgets the oldest rooms beyond its capacity", "[room_board]") {
  boost::asio::io_context ioc;
  room_board board{ioc, 2};
  board.ready("a");
  board.ready("b");
  board.ready("c");
  CHECK(board.size() == 2);
  CHECK(board.state("a") == room_state::unknown);
  CHECK(board.state("c") == room_state::ready);
}
