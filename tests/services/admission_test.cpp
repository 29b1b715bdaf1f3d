#include "services/admission.hpp"

#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace troupe::services;
using namespace std::chrono_literals;
using verdict = admission_verdict;

namespace {

/// An admission control on a fake clock: time moves and the alarm rings only when the test
/// says so. Records what each request was told, in order.
struct door {
  admission_control::clock::time_point now{};
  std::optional<admission_control::clock::time_point> alarm; ///< Last alarm asked for.
  std::shared_ptr<admission_control> ctl;
  std::vector<std::pair<std::string, verdict>> told; ///< (request, what its waiter heard)
  std::vector<std::pair<std::string, admission_permit>> running; ///< Admitted requests.

  explicit door(admission_limits limits)
      : ctl(std::make_shared<admission_control>(
            limits, [this](auto t) { alarm = t; }, [this] { return now; })) {}

  ~door() {
    // One at a time: a permit going back may admit a waiter, which joins `running`.
    while (!running.empty()) {
      auto last = std::move(running.back().second);
      running.pop_back();
    }
  }

  /// A request arrives; an admitted one (at once or later) joins `running`.
  admission_control::entry arrive(const std::string& name) {
    auto e = ctl->enter([this, name](verdict v, admission_permit p) {
      told.emplace_back(name, v);
      if (v == verdict::admitted) {
        running.emplace_back(name, std::move(p));
      }
    });
    if (e.verdict == verdict::admitted) {
      running.emplace_back(name, std::move(e.permit));
    }
    return e;
  }

  /// Request `name` ends: its permit goes back.
  void finish(const std::string& name) {
    for (auto it = running.begin(); it != running.end(); ++it) {
      if (it->first == name) {
        auto permit = std::move(it->second);
        running.erase(it);
        permit.release();
        return;
      }
    }
    FAIL("not running: " << name);
  }

  /// Moves the clock on by `by`, ringing the alarm (each time it is set again) while it is due
  /// by then.
  void advance(std::chrono::milliseconds by) {
    now += by;
    while (alarm && *alarm <= now) {
      alarm.reset();
      ctl->wake();
    }
  }

  std::vector<std::string> names_running() const {
    std::vector<std::string> out;
    for (auto& r : running) {
      out.push_back(r.first);
    }
    return out;
  }
};

admission_limits limits(std::size_t active, std::size_t queued, std::chrono::milliseconds t,
                        double rate = 0) {
  return {active, queued, t, rate};
}

} // namespace

TEST_CASE("admission: up to max_active at once, then up to max_queued wait, then queue_full") {
  door d{limits(2, 1, 1000ms)};
  CHECK(d.arrive("a").verdict == verdict::admitted);
  CHECK(d.arrive("b").verdict == verdict::admitted);
  auto c = d.arrive("c");
  CHECK(c.verdict == verdict::queued);
  CHECK(c.ticket != 0);
  CHECK_FALSE(c.permit.held());
  CHECK(d.arrive("d").verdict == verdict::queue_full);
  auto s = d.ctl->stats();
  CHECK(s.active == 2);
  CHECK(s.queued == 1);
  CHECK(s.admitted == 2);
  CHECK(s.rejected_full == 1);
  CHECK(d.told.empty()); // nobody's waiter was called yet
}

TEST_CASE("admission: a freed slot goes to the oldest waiter, in arrival order") {
  door d{limits(1, 3, 1000ms)};
  d.arrive("a");
  d.arrive("b");
  d.arrive("c");
  d.arrive("d");
  d.finish("a");
  CHECK(d.names_running() == std::vector<std::string>{"b"});
  // A newcomer does not overtake the queue, even in the instant a slot is handed over.
  CHECK(d.arrive("e").verdict == verdict::queued);
  d.finish("b");
  d.finish("c");
  d.finish("d");
  CHECK(d.names_running() == std::vector<std::string>{"e"});
  std::vector<std::pair<std::string, verdict>> want{{"b", verdict::admitted},
                                                    {"c", verdict::admitted},
                                                    {"d", verdict::admitted},
                                                    {"e", verdict::admitted}};
  CHECK(d.told == want);
  CHECK(d.ctl->stats().active == 1);
  CHECK(d.ctl->stats().admitted_queued == 4);
}

TEST_CASE("admission: waiters time out at their deadline, oldest first; later ones stay") {
  door d{limits(1, 3, 1000ms)};
  d.arrive("a");
  d.arrive("b");
  REQUIRE(d.alarm);
  CHECK(*d.alarm == d.now + 1000ms); // one alarm, for the head
  d.advance(400ms);
  d.arrive("c");
  d.advance(599ms);
  CHECK(d.told.empty());
  d.advance(1ms); // b's deadline
  CHECK(d.told == std::vector<std::pair<std::string, verdict>>{{"b", verdict::queue_timeout}});
  REQUIRE(d.alarm); // set again, for c
  CHECK(d.ctl->stats().queued == 1);
  d.advance(400ms);
  CHECK(d.told.back() == std::pair<std::string, verdict>{"c", verdict::queue_timeout});
  CHECK_FALSE(d.alarm);
  auto s = d.ctl->stats();
  CHECK(s.rejected_timeout == 2);
  CHECK(s.queued == 0);
  CHECK(s.active == 1); // a still runs: timeouts touch waiters only
}

TEST_CASE("admission: an early alarm (the head left) times nobody out and is set again") {
  door d{limits(1, 2, 1000ms)};
  d.arrive("a");
  auto b = d.arrive("b");
  d.advance(500ms);
  d.arrive("c");
  REQUIRE(d.ctl->cancel(b.ticket)); // the alarm still points at b's deadline
  d.advance(500ms);
  CHECK(d.told.empty());
  REQUIRE(d.alarm);
  CHECK(*d.alarm == d.now + 500ms); // c's deadline
}

TEST_CASE("admission: a cancelled waiter leaves at once, frees its place, is never called") {
  door d{limits(1, 1, 1000ms)};
  d.arrive("a");
  auto b = d.arrive("b");
  CHECK(d.arrive("c").verdict == verdict::queue_full);
  CHECK(d.ctl->cancel(b.ticket));
  CHECK_FALSE(d.ctl->cancel(b.ticket)); // once
  CHECK(d.ctl->stats().queued == 0);
  CHECK(d.arrive("d").verdict == verdict::queued); // b's place is free again
  d.finish("a");
  CHECK(d.names_running() == std::vector<std::string>{"d"});
  for (auto& [name, v] : d.told) {
    CHECK(name != "b");
  }
  CHECK(d.ctl->stats().abandoned == 1);
}

TEST_CASE("admission: cancelling an admitted or timed-out request does nothing") {
  door d{limits(1, 1, 1000ms)};
  d.arrive("a");
  auto b = d.arrive("b");
  d.finish("a"); // b admitted
  CHECK_FALSE(d.ctl->cancel(b.ticket));
  auto c = d.arrive("c");
  d.advance(1000ms); // c timed out
  CHECK_FALSE(d.ctl->cancel(c.ticket));
  auto s = d.ctl->stats();
  CHECK(s.active == 1);
  CHECK(s.abandoned == 0);
}

TEST_CASE("admission: a permit gives its slot back exactly once") {
  door d{limits(1, 0, 1000ms)};
  auto a = d.ctl->enter({});
  REQUIRE(a.verdict == verdict::admitted);
  auto moved = std::move(a.permit);
  CHECK_FALSE(a.permit.held());
  a.permit.release(); // moved-from: nothing
  CHECK(d.ctl->stats().active == 1);
  moved.release();
  moved.release();
  CHECK(d.ctl->stats().active == 0);
  {
    auto b = d.ctl->enter({});
    CHECK(d.ctl->stats().active == 1);
    admission_permit other;
    other = std::move(b.permit);
    other = admission_permit{}; // assigning over a held permit releases it
    CHECK(d.ctl->stats().active == 0);
  }
  CHECK(d.ctl->stats().active == 0);
}

TEST_CASE("admission: a slot handed to a waiter that drops it goes on to the next") {
  door d{limits(1, 2, 1000ms)};
  d.arrive("a");
  // A request whose client left between being admitted and starting drops its permit.
  d.ctl->enter([](verdict, admission_permit) {});
  d.arrive("c");
  d.finish("a");
  CHECK(d.names_running() == std::vector<std::string>{"c"});
  CHECK(d.ctl->stats().active == 1);
}

TEST_CASE("admission: random arrivals, ends, cancels and timeouts never leak a slot") {
  std::mt19937 rng{42};
  for (int round = 0; round < 40; ++round) {
    auto max_active = 1 + rng() % 4;
    auto max_queued = rng() % 5;
    // Half the rounds with a rate limit, from a token every 5 ms to one every 200 ms.
    double rate = round % 2 ? 0.0 : 5.0 + static_cast<double>(rng() % 196);
    door d{limits(max_active, max_queued, 100ms, rate)};
    auto start = d.now;
    std::vector<std::uint64_t> tickets;
    std::size_t arrivals = 0;
    for (int step = 0; step < 400; ++step) {
      switch (rng() % 4) {
      case 0:
      case 1: {
        auto e = d.arrive("r" + std::to_string(arrivals++));
        if (e.verdict == verdict::queued) {
          tickets.push_back(e.ticket);
        }
        break;
      }
      case 2:
        if (!d.running.empty()) {
          d.finish(d.running[rng() % d.running.size()].first);
        } else if (!tickets.empty()) {
          d.ctl->cancel(tickets[rng() % tickets.size()]);
        }
        break;
      default:
        d.advance(std::chrono::milliseconds(rng() % 60));
      }
      auto s = d.ctl->stats();
      REQUIRE(s.active == d.running.size()); // every slot has exactly one holder
      REQUIRE(s.active <= max_active);
      REQUIRE(s.queued <= max_queued);
      // Nobody waits beside a free slot, unless for a token.
      REQUIRE((s.queued == 0 || s.active == max_active || (rate > 0 && s.tokens < 1.0)));
      REQUIRE(s.tokens <= max_active);
    }
    // Every arrival is accounted for exactly once.
    auto s = d.ctl->stats();
    if (rate > 0) {
      // Never more than a full bucket plus what the rate earned meanwhile.
      auto secs = std::chrono::duration<double>(d.now - start).count();
      CHECK(static_cast<double>(s.admitted + s.admitted_queued) <= max_active + rate * secs + 1e-6);
    }
    CHECK(s.admitted + s.admitted_queued + s.rejected_full + s.rejected_timeout + s.abandoned +
              s.queued ==
          arrivals);
    d.advance(1000ms); // every waiter is let in (a token came) or timed out
    while (!d.running.empty()) {
      d.finish(d.running.front().first);
    }
    s = d.ctl->stats();
    CHECK(s.active == 0);
    CHECK(s.queued == 0);
  }
}

TEST_CASE("admission rate: a full bucket lets max_active in at once, then one per 1/rate") {
  door d{limits(3, 10, 10000ms, 2.0)};
  CHECK(d.ctl->stats().tokens == 3.0);
  CHECK(d.arrive("a").verdict == verdict::admitted);
  CHECK(d.arrive("b").verdict == verdict::admitted);
  CHECK(d.arrive("c").verdict == verdict::admitted);
  d.finish("a");
  d.finish("b");
  d.finish("c");
  // Slots are free, tokens are not: d waits for the next one, half a second away.
  CHECK(d.arrive("d").verdict == verdict::queued);
  REQUIRE(d.alarm);
  CHECK(*d.alarm == d.now + 500ms);
  d.advance(499ms);
  CHECK(d.names_running().empty());
  d.advance(1ms);
  CHECK(d.names_running() == std::vector<std::string>{"d"});
  // The bucket refills while nobody asks: after 1.5 s idle, three tokens again (never more).
  d.finish("d");
  d.advance(5000ms);
  CHECK(d.ctl->stats().tokens == 3.0);
  CHECK(d.arrive("e").verdict == verdict::admitted);
  CHECK(d.arrive("f").verdict == verdict::admitted);
  CHECK(d.arrive("g").verdict == verdict::admitted);
  CHECK(d.arrive("h").verdict == verdict::queued);
}

TEST_CASE("admission rate: the sustained rate is the refill rate, with short requests") {
  door d{limits(4, 100, 60000ms, 10.0)};
  // A request every 10 ms for 10 s, each done at once: 4 at once, then 10 per second.
  int arrived = 0;
  for (int ms = 0; ms < 10000; ms += 10) {
    d.arrive("r" + std::to_string(arrived++));
    while (!d.running.empty()) {
      d.finish(d.running.front().first);
    }
    d.advance(10ms);
  }
  auto s = d.ctl->stats();
  auto let_in = s.admitted + s.admitted_queued;
  CHECK(let_in == 4 + 100);
  // The queue filled up behind the rate, then newcomers were refused.
  CHECK(s.queued >= 99);
  CHECK(s.rejected_full == static_cast<std::uint64_t>(arrived) - let_in - s.queued);
}

TEST_CASE("admission rate: a slot freed before the next token stays the head's") {
  door d{limits(1, 5, 10000ms, 1.0)};
  d.arrive("a"); // takes the only token
  d.arrive("b");
  d.finish("a"); // the slot is free, no token yet
  CHECK(d.ctl->stats().active == 0);
  CHECK(d.arrive("c").verdict == verdict::queued); // behind b, not beside it
  d.advance(1000ms);
  CHECK(d.names_running() == std::vector<std::string>{"b"});
  d.finish("b");
  d.advance(999ms);
  CHECK(d.names_running().empty());
  d.advance(1ms);
  CHECK(d.names_running() == std::vector<std::string>{"c"});
}

TEST_CASE("admission rate: a waiter whose token comes after its deadline times out") {
  door d{limits(2, 5, 1000ms, 0.5)};
  d.arrive("a");
  d.arrive("b");
  d.finish("a");
  d.finish("b");
  d.arrive("c"); // the next token is 2 s away, the deadline 1 s
  REQUIRE(d.alarm);
  CHECK(*d.alarm == d.now + 1000ms);
  d.advance(1000ms);
  CHECK(d.told == std::vector<std::pair<std::string, verdict>>{{"c", verdict::queue_timeout}});
  CHECK(d.ctl->stats().rejected_timeout == 1);
}
