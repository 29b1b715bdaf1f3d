#pragma once

// A deterministic actor system for actor tests: nothing runs until the test says so
// (`run()`), and time moves only when the test moves it (`advance()`). Written to move to
// tests/fakes/ unchanged once a shared fixture lives there.

#include "protocol/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <chrono>
#include <vector>

namespace troupe::test {

struct deterministic_system {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

  deterministic_system()
      : sys(init(cfg)), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    // Away from the epoch: code that treats a zero time point as "never" sees real times.
    sched.clock().current_time += std::chrono::hours(1);
  }

  ~deterministic_system() {
    sched.run();
    sched.clock().cancel_all();
    sched.run();
    sys.await_actors_before_shutdown(false);
  }

  deterministic_system(const deterministic_system&) = delete;
  deterministic_system& operator=(const deterministic_system&) = delete;

  /// Runs every job that is ready.
  void run() { sched.run(); }

  /// Moves the clock by `d`, fires what fell due, and runs what that made ready.
  void advance(std::chrono::milliseconds d) {
    sched.clock().advance_time(d);
    sched.run();
  }

  static caf::actor_system_config& init(caf::actor_system_config& cfg) {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.add_message_types<caf::id_block::troupe>();
    return cfg;
  }
};

} // namespace troupe::test
