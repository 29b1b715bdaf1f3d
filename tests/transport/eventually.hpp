#pragma once

// Waiting in tests for what another thread does.

#include <chrono>
#include <thread>

namespace troupe::test {

/// Waits up to `within` for `pred` to hold, looking every millisecond; false if it never did.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  auto until = std::chrono::steady_clock::now() + within;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) {
      return pred();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace troupe::test
