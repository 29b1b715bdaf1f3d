#pragma once

// How long an io loop polls before it sleeps, adapted to the idle spells it sees, the way KVM
// adapts a vCPU's `halt_poll_ns`. A poll pays off only when work comes before it ends: a
// spell the cap could have covered grows the window to cover it, a spell longer than the cap
// (nothing a poll of any allowed length would have caught) halves it, down to 0. So the
// window settles just above the gaps the loop actually waits through (a worker's answer, a
// client's next request) on a host where they take 30 µs as on one where they take 150 µs,
// and to 0 where they take milliseconds (an engine's real TTFT, an idle gateway), where every
// poll would be spent for nothing.

#include <chrono>

namespace troupe::transport {

class poll_window {
public:
  using duration = std::chrono::microseconds;

  /// The least window a growth starts from (below it a halving goes to 0).
  static constexpr duration floor{10};

  /// A window of at most `cap`, first `start` (clamped to [0, cap]).
  poll_window(duration cap, duration start) noexcept;

  /// How long the next poll may last (0: sleep at once).
  duration current() const noexcept { return window_; }

  /// The loop ran out of work, polled for `current()` in vain (or not at all, at 0) and slept;
  /// work came `idle` after it ran out. Returns true when the window changed.
  bool missed(duration idle) noexcept;

private:
  duration cap_;
  duration window_;
};

} // namespace troupe::transport
