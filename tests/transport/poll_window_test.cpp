#include "transport/poll_window.hpp"

#include <catch2/catch.hpp>
#include <random>

using troupe::transport::poll_window;
using namespace std::chrono_literals;

TEST_CASE("a poll window starts where it is told, within its cap") {
  CHECK(poll_window{300us, 50us}.current() == 50us);
  CHECK(poll_window{30us, 50us}.current() == 30us);
  CHECK(poll_window{300us, -5us}.current() == 0us);
  poll_window off{0us, 50us};
  CHECK(off.current() == 0us);
  CHECK_FALSE(off.missed(10us)); // a cap of 0 never polls, whatever the spells
  CHECK_FALSE(off.missed(0us));
  CHECK(off.current() == 0us);
}

TEST_CASE("a spell the cap would have covered grows the window to cover it") {
  poll_window w{300us, 50us};
  CHECK(w.missed(150us));
  CHECK(w.current() == 187us); // the spell and a quarter more
  CHECK(w.missed(200us));
  CHECK(w.current() == 300us);  // double would be more than the cap
  CHECK_FALSE(w.missed(290us)); // already at the cap
  CHECK(w.current() == 300us);
}

TEST_CASE("a short miss at least doubles the window, from the floor when it was closed") {
  poll_window w{300us, 0us};
  CHECK(w.missed(2us));
  CHECK(w.current() == poll_window::floor);
  CHECK(w.missed(12us));
  CHECK(w.current() == 2 * poll_window::floor);
}

TEST_CASE("spells longer than the cap halve the window until it closes") {
  poll_window w{300us, 300us};
  CHECK(w.missed(5ms));
  CHECK(w.current() == 150us);
  w.missed(5ms);
  w.missed(5ms);
  w.missed(5ms);
  CHECK(w.current() == 18us);
  CHECK(w.missed(5ms));
  CHECK(w.current() == 0us); // 9 µs is below the floor: no poll at all
  CHECK_FALSE(w.missed(1s));
  CHECK(w.current() == 0us);
}

TEST_CASE("under random spells the window stays within its cap and covers every short miss") {
  std::mt19937 rng{7};
  std::uniform_int_distribution<int> spell_us{0, 2000};
  poll_window w{400us, 50us};
  for (int i = 0; i < 10000; ++i) {
    auto idle = std::chrono::microseconds{spell_us(rng)};
    if (idle <= w.current()) {
      continue; // the poll would have caught it: a hit, nothing to learn
    }
    auto before = w.current();
    w.missed(idle);
    REQUIRE(w.current() <= 400us);
    if (idle <= 400us) {
      REQUIRE(w.current() >= std::min(idle, 400us)); // the next such spell is caught
    } else {
      REQUIRE(w.current() <= before / 2 + 1us);
    }
  }
}
