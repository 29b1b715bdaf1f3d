#pragma once

// A deterministic actor system for actor tests (STYLE.md, "Deterministic actor tests"): CAF's
// testing scheduler runs nothing until the test says so (`run`), and time moves only when the
// test moves it (`advance`). No thread, no sleep: a test drives every step itself.

#include "actors/ask.hpp"
#include "protocol/type_ids.hpp"

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace troupe::test {

/// Derive a test fixture from it, or hold one. Actors handed to `keep` are stopped when the
/// fixture ends (`shutdown`); before the system goes, whatever is left runs and pending
/// timeouts are dropped.
class actor_system_fixture {
public:
  actor_system_fixture()
      : sys(init(cfg)), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    // Away from the clock's epoch, so that "now minus a timeout" is a valid time.
    sched.clock().current_time += std::chrono::hours(1);
  }

  ~actor_system_fixture() { shutdown(); }

  /// Stops the kept actors, runs what is left and drops pending timeouts; once. A derived
  /// fixture whose own members the actors use (an io_context their proxies hold) calls it in
  /// its destructor, before those members go.
  void shutdown() {
    if (down_) {
      return;
    }
    down_ = true;
    for (auto& f : teardown_) {
      f();
    }
    for (auto& a : kept_) {
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    }
    sched.run();
    sched.clock().cancel_all();
    sched.run();
    sys.await_actors_before_shutdown(false);
  }

  actor_system_fixture(const actor_system_fixture&) = delete;
  actor_system_fixture& operator=(const actor_system_fixture&) = delete;

  caf::actor_system_config cfg; ///< Declared before `sys`, which is built from it.
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

  /// Runs every job that is ready, and those they make ready, until none is.
  void run() { sched.run(); }

  /// Runs at most one job; false when none was ready.
  bool run_once() { return sched.try_run_once(); }

  /// Moves the clock `d` forward (timeouts that fall due fire) and runs what became ready.
  void advance(std::chrono::steady_clock::duration d) {
    sched.clock().advance_time(d);
    sched.run();
  }

  /// The scheduler's clock now (what the actors under test see).
  caf::actor_clock::time_point now() const { return sched.clock().now(); }

  /// Stops `h` (exit reason `user_shutdown`) when the fixture ends; returns `h`.
  template <class Handle> Handle keep(Handle h) {
    kept_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  /// Calls `f` when the fixture ends, before the kept actors are stopped (an actor with a
  /// stop message of its own: the registry's `stop_atom`).
  void at_teardown(std::function<void()> f) { teardown_.push_back(std::move(f)); }

  /// Where the answer of an ask will be: empty until it comes, then the value or the error.
  template <class T> using answer = std::shared_ptr<std::optional<caf::expected<T>>>;

  /// Asks `dest` with `xs...` from a short-lived actor; runs nothing (see `ask` for that).
  template <class T, class Handle, class... Ts> answer<T> ask_later(const Handle& dest, Ts... xs) {
    auto out = std::make_shared<std::optional<caf::expected<T>>>();
    actors::ask(
        sys, dest, [out](T& x) { *out = caf::expected<T>{std::move(x)}; },
        [out](caf::error& e) { *out = caf::expected<T>{std::move(e)}; }, std::move(xs)...);
    return out;
  }

  /// Asks `dest` with `xs...` and runs the system: the answer, the error, or
  /// `caf::sec::request_timeout` when no answer came once nothing was left to run.
  template <class T, class Handle, class... Ts> caf::expected<T> ask(const Handle& dest, Ts... xs) {
    auto out = ask_later<T>(dest, std::move(xs)...);
    run();
    if (!*out) {
      return caf::make_error(caf::sec::request_timeout);
    }
    return std::move(**out);
  }

private:
  static caf::actor_system_config& init(caf::actor_system_config& cfg) {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.add_message_types<caf::id_block::troupe>();
    return cfg;
  }

  std::vector<std::function<void()>> teardown_;
  std::vector<caf::actor> kept_;
  bool down_ = false;
};

} // namespace troupe::test
