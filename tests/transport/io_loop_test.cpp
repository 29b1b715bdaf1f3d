#include "tests/transport/eventually.hpp"
#include "transport/io_loop.hpp"
#include "transport/send_phase.hpp"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace troupe::transport;
using troupe::test::eventually;
using namespace std::chrono_literals;
namespace net = boost::asio;

TEST_CASE("the io loop runs every handler and returns when the work runs out") {
  for (auto budget : {0us, 200us}) {
    net::io_context ioc{1};
    int ran = 0;
    for (int i = 0; i < 5; ++i) {
      net::post(ioc, [&] { ++ran; });
    }
    net::steady_timer timer{ioc, 20ms};
    timer.async_wait([&](auto) { ++ran; });
    io_loop_stats stats;
    run_io_loop(ioc, {budget, [] { return false; }}, stats);
    CHECK(ran == 6);
    CHECK(ioc.stopped());
    if (budget == 0us) {
      CHECK(stats.spins == 0); // a plain run: no polling at all
    } else {
      // The wait for the timer began with a poll of at most the budget, then a sleep.
      CHECK(stats.spins >= 1);
      CHECK(stats.spin_ns >= 1);
    }
  }
}

TEST_CASE("work that arrives while the io loop polls is taken without sleeping") {
  net::io_context ioc{1};
  auto guard = net::make_work_guard(ioc);
  io_loop_stats stats;
  std::atomic<bool> ran{false};
  // A budget far longer than the test: the loop is still polling when the work comes.
  std::thread loop{[&] {
    run_io_loop(ioc, {std::chrono::seconds(30), [] { return false; }}, stats);
  }};
  // Nothing is ready: the loop begins to poll (and counts it).
  REQUIRE(eventually([&] { return stats.spins.load() == 1; }));
  std::this_thread::sleep_for(20ms);
  net::post(ioc, [&] { ran = true; });
  REQUIRE(eventually([&] { return ran.load(); }));
  REQUIRE(eventually([&] { return stats.hits.load() == 1; }));
  CHECK(stats.vetoes == 0);
  guard.reset();
  ioc.stop();
  loop.join();
}

TEST_CASE("the io loop sleeps at once while other threads wait for a CPU") {
  net::io_context ioc{1};
  auto guard = net::make_work_guard(ioc);
  io_loop_stats stats;
  std::atomic<int> ran{0};
  std::atomic<int> asked{0};
  std::thread loop{[&] {
    run_io_loop(ioc,
                {std::chrono::seconds(30),
                 [&] {
                   ++asked;
                   return true;
                 }},
                stats);
  }};
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(eventually([&] { return asked.load() >= i; }));
    net::post(ioc, [&] { ++ran; });
    REQUIRE(eventually([&] { return ran.load() == i; })); // woken from its sleep
  }
  CHECK(stats.spins == 0);
  CHECK(stats.hits == 0);
  CHECK(stats.vetoes >= 3);
  guard.reset();
  ioc.stop();
  loop.join();
}

TEST_CASE("a stopped io context ends the io loop, polling or asleep") {
  for (bool veto : {false, true}) {
    net::io_context ioc{1};
    auto guard = net::make_work_guard(ioc);
    io_loop_stats stats;
    std::thread loop{[&] {
      run_io_loop(ioc, {std::chrono::seconds(30), [veto] { return veto; }}, stats);
    }};
    std::this_thread::sleep_for(20ms);
    ioc.stop();
    loop.join(); // returns: the test would hang otherwise
    CHECK(ioc.stopped());
  }
}

namespace {

/// Handlers that each defer a write; the write records how many handlers had run when it went
/// out.
struct counted_writes {
  int handlers = 0;
  std::vector<int> written;

  void post(net::io_context& ioc, int n) {
    for (int i = 0; i < n; ++i) {
      net::post(ioc, [this] {
        ++handlers;
        send_phase::defer([this] { written.push_back(handlers); });
      });
    }
  }
};

} // namespace

TEST_CASE("a busy pass's writes go out every `send_batch` handlers and when it ends") {
  for (auto budget : {0us, 200us}) {
    net::io_context ioc{1};
    counted_writes w;
    w.post(ioc, 10);
    io_loop_stats stats;
    busy_poll_options opts{budget, [] { return false; }};
    opts.send_batch = 3;
    opts.busy_pass = 0; // every write deferred
    run_io_loop(ioc, opts, stats);
    if (budget == 0us) {
      // The first handler ends the sleep (run_one); the pass after it sends every 3 handlers.
      CHECK(w.written == std::vector<int>{4, 4, 4, 4, 7, 7, 7, 10, 10, 10});
    } else {
      // One pass of all ten: sent after handlers 3, 6 and 9, the last at its end.
      CHECK(w.written == std::vector<int>{3, 3, 3, 6, 6, 6, 9, 9, 9, 10});
    }
    CHECK(send_phase::pending() == 0);
    CHECK_FALSE(send_phase::deferring()); // the loop's scope ended with it
  }
}

TEST_CASE("a pass's first handlers write at once; once it has run busy_pass, writes wait") {
  net::io_context ioc{1};
  counted_writes w;
  w.post(ioc, 8);
  io_loop_stats stats;
  busy_poll_options opts{0us, {}};
  opts.send_batch = 32;
  opts.busy_pass = 4;
  run_io_loop(ioc, opts, stats);
  // The first handler ends the sleep (run_one), then comes the pass: once it has run 4
  // handlers (the 2nd to the 5th, writing at once), the writes of the rest wait for its end.
  CHECK(w.written == std::vector<int>{1, 2, 3, 4, 5, 8, 8, 8});
}

TEST_CASE("a lone handler's write goes at once, a busy loop or not") {
  net::io_context ioc{1};
  auto guard = net::make_work_guard(ioc);
  io_loop_stats stats;
  std::atomic<int> written{0};
  std::atomic<bool> deferred_at_write{true};
  busy_poll_options opts{200us, [] { return false; }};
  opts.send_batch = 32;
  std::thread loop{[&] { run_io_loop(ioc, opts, stats); }};
  for (int i = 1; i <= 3; ++i) {
    std::this_thread::sleep_for(5ms);
    net::post(ioc, [&] {
      deferred_at_write = send_phase::deferring();
      send_phase::defer([&] { ++written; });
    });
    REQUIRE(eventually([&] { return written.load() == i; }));
    CHECK_FALSE(deferred_at_write.load());
  }
  guard.reset();
  ioc.stop();
  loop.join();
}

TEST_CASE("the runnable-thread count is read from /proc/loadavg's fourth field") {
  CHECK(runnable_threads("0.52 0.61 0.70 3/412 12345\n") == 3u);
  CHECK(runnable_threads("1.09 1.18 1.08 12/84 21083") == 12u);
  CHECK_FALSE(runnable_threads(""));
  CHECK_FALSE(runnable_threads("0.52 0.61 0.70"));
  CHECK_FALSE(runnable_threads("0.52 0.61 0.70 x/412 1"));
  CHECK_FALSE(runnable_threads("0.52 0.61 0.70 3 1"));
}

TEST_CASE("the CPU quota is read from a cgroup cpu.max line") {
  CHECK(cpu_quota("50000 100000\n") == 0.5);
  CHECK(cpu_quota("200000 100000") == 2.0);
  CHECK_FALSE(cpu_quota("max 100000\n"));
  CHECK_FALSE(cpu_quota("-1 100000")); // cgroup v1's "no quota"
  CHECK_FALSE(cpu_quota("50000 0"));
  CHECK_FALSE(cpu_quota(""));
  CHECK_FALSE(cpu_quota("garbage"));
}

TEST_CASE("cpu contention: more runnable threads than CPUs means another thread waits") {
  auto path =
      std::filesystem::temp_directory_path() / ("troupe-loadavg-" + std::to_string(::getpid()));
  auto write = [&](const char* line) { std::ofstream{path} << line; };
  write("0.10 0.20 0.30 2/100 4242\n");
  {
    cpu_contention two_cpus{0us, path.string(), 2};
    CHECK_FALSE(two_cpus.others_waiting()); // this thread and one other: a CPU each
    write("0.10 0.20 0.30 3/100 4242\n");
    CHECK(two_cpus.others_waiting()); // read again at once (no interval)
    write("0.10 0.20 0.30 1/100 4242\n");
    CHECK_FALSE(two_cpus.others_waiting());
  }
  {
    cpu_contention cached{std::chrono::hours(1), path.string(), 2};
    CHECK_FALSE(cached.others_waiting()); // the first question reads the file
    write("0.10 0.20 0.30 9/100 4242\n");
    CHECK_FALSE(cached.others_waiting()); // then the answer holds for the interval
  }
  {
    write("not a loadavg line\n");
    cpu_contention unreadable{0us, path.string(), 2};
    CHECK(unreadable.others_waiting()); // unknown: no spinning
  }
  std::filesystem::remove(path);
  cpu_contention missing{0us, path.string(), 64};
  CHECK(missing.others_waiting());
}

TEST_CASE("cpu contention of a pinned thread: its CPU taken, not the machine's count") {
  auto path =
      std::filesystem::temp_directory_path() / ("troupe-loadavg-pin-" + std::to_string(::getpid()));
  std::ofstream{path} << "0.10 0.20 0.30 9/100 4242\n"; // busy elsewhere: nine runnable
  std::optional<long> switches = 3;
  cpu_contention pinned{0us, path.string(), 2, [&] { return switches; }};
  CHECK(pinned.pinned());
  CHECK_FALSE(pinned.others_waiting()); // the first reading sets the mark
  CHECK_FALSE(pinned.others_waiting()); // nobody took the CPU: the other CPUs' load is theirs
  switches = 4;
  CHECK(pinned.others_waiting());       // preempted since the last question: someone wants it
  CHECK_FALSE(pinned.others_waiting()); // and not again since
  switches = std::nullopt;
  CHECK(pinned.others_waiting()); // unknown: no spinning
  switches = 4;
  CHECK_FALSE(pinned.others_waiting()); // known again: a new mark
  switches = 6;
  CHECK(pinned.others_waiting());

  // Asked again within the interval: a preemption vetoed the one spin it was found at, an
  // unknown reading vetoes every spin until the next one.
  switches = 0;
  cpu_contention cached{std::chrono::hours(1), path.string(), 2, [&] { return switches; }};
  CHECK_FALSE(cached.others_waiting());
  switches = 1;
  CHECK_FALSE(cached.others_waiting()); // not read again before the interval is over
  switches = std::nullopt;
  cpu_contention unknown{std::chrono::hours(1), path.string(), 2, [&] { return switches; }};
  CHECK(unknown.others_waiting());
  CHECK(unknown.others_waiting());

  cpu_contention machine{0us, path.string(), 2};
  CHECK_FALSE(machine.pinned());
  CHECK(machine.others_waiting()); // unpinned: nine runnable threads on two CPUs
  std::filesystem::remove(path);
}

TEST_CASE("the calling thread's CPUs and preemptions are read") {
  auto cpus = allowed_cpus();
  REQUIRE(cpus);
  CHECK(*cpus >= 1);
  auto before = own_preemptions();
  REQUIRE(before);
  CHECK(*before >= 0);
  // The default check is the pinned one exactly when some online CPU is left out.
  cpu_contention own;
  CHECK(own.pinned() == (*cpus < static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN))));

  if (*cpus >= 2) { // a thread pinned to one of them asks about its own CPU
    cpu_set_t all;
    REQUIRE(::sched_getaffinity(0, sizeof(all), &all) == 0);
    int first = 0;
    while (!CPU_ISSET(first, &all)) {
      ++first;
    }
    bool pinned = false;
    bool one_cpu = false;
    std::thread t{[&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(first, &one);
      if (::pthread_setaffinity_np(::pthread_self(), sizeof(one), &one) == 0) {
        pinned = cpu_contention{}.pinned();
        one_cpu = allowed_cpus() == 1u;
      }
    }};
    t.join();
    CHECK(pinned);
    CHECK(one_cpu);
  }
}

TEST_CASE("the kernel's own idle polling is recognised (haltpoll with a non-zero poll)") {
  CHECK(kernel_halt_polls("haltpoll\n", "200000\n"));
  CHECK_FALSE(kernel_halt_polls("haltpoll\n", "0\n")); // these VMs: halt at once
  CHECK_FALSE(kernel_halt_polls("intel_idle\n", ""));  // bare metal: no haltpoll module
  CHECK_FALSE(kernel_halt_polls("acpi_idle", "200000"));
  CHECK_FALSE(kernel_halt_polls("", ""));
  CHECK_FALSE(kernel_halt_polls("haltpoll", "soon"));
}

namespace {

/// Posts one handler to `ioc` after `gap`, then waits until it has run (counted in `ran`).
void work_after(net::io_context& ioc, std::atomic<int>& ran, std::chrono::milliseconds gap) {
  auto expected = ran.load() + 1;
  std::this_thread::sleep_for(gap);
  net::post(ioc, [&ran] { ++ran; });
  REQUIRE(eventually([&] { return ran.load() == expected; }));
}

} // namespace

TEST_CASE("an adaptive io loop polls long enough for the gaps it waits through") {
  net::io_context ioc{1};
  auto guard = net::make_work_guard(ioc);
  io_loop_stats stats;
  busy_poll_options opts{std::chrono::milliseconds(50), [] { return false; }};
  opts.adaptive = true;
  opts.adaptive_start = 20us; // far shorter than the 2 ms between two pieces of work
  std::thread loop{[&] { run_io_loop(ioc, opts, stats); }};
  std::atomic<int> ran{0};
  // Work every ~2 ms: the first polls end before it comes, then the window covers the gap.
  for (int i = 0; i < 40 && stats.hits.load() < 3; ++i) {
    work_after(ioc, ran, 2ms);
  }
  CHECK(stats.hits.load() >= 3);
  CHECK(stats.window_changes.load() >= 1);
  CHECK(stats.window_us.load() >= 2000);
  CHECK(stats.window_us.load() <= 50000);
  guard.reset();
  ioc.stop();
  loop.join();
}

TEST_CASE("an adaptive io loop stops polling when its gaps are longer than the cap") {
  net::io_context ioc{1};
  auto guard = net::make_work_guard(ioc);
  io_loop_stats stats;
  busy_poll_options opts{200us, [] { return false; }};
  opts.adaptive = true;
  opts.adaptive_start = 200us;
  std::thread loop{[&] { run_io_loop(ioc, opts, stats); }};
  std::atomic<int> ran{0};
  REQUIRE(eventually([&] { return stats.spins.load() == 1; })); // running, polling at 200 µs
  // Work every ~10 ms, far past the cap: each poll is wasted, so the window halves to 0.
  for (int i = 0; i < 40 && stats.window_us.load() != 0; ++i) {
    work_after(ioc, ran, 10ms);
  }
  CHECK(stats.window_us.load() == 0);
  auto spins = stats.spins.load();
  // Closed: the loop sleeps at once and polls no more while the gaps stay long.
  for (int i = 0; i < 3; ++i) {
    work_after(ioc, ran, 10ms);
  }
  std::this_thread::sleep_for(5ms);
  CHECK(stats.spins.load() == spins);
  CHECK(stats.hits.load() == 0);
  guard.reset();
  ioc.stop();
  loop.join();
}
