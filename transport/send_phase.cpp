#include "transport/send_phase.hpp"

#include <utility>

namespace troupe::transport {

namespace {

struct thread_sends {
  bool deferring = false;
  bool flushing = false;
  std::deque<std::function<void()>> queue;
};

thread_sends& mine() {
  thread_local thread_sends sends;
  return sends;
}

} // namespace

send_phase::scope::scope(std::size_t batch) : batch_(batch) {
  mine().deferring = false;
}

void send_phase::scope::defer_writes(bool on) const noexcept {
  mine().deferring = on && batch_ > 0;
}

send_phase::scope::~scope() {
  flush(); // nothing deferred is left behind
  mine().deferring = false;
}

bool send_phase::deferring() noexcept {
  return mine().deferring;
}

void send_phase::defer(std::function<void()> write) {
  auto& s = mine();
  if (!s.deferring) {
    return write();
  }
  s.queue.push_back(std::move(write));
}

std::size_t send_phase::flush() {
  auto& s = mine();
  if (s.flushing) {
    return 0; // a write that flushes: the running flush takes what it queued
  }
  s.flushing = true;
  struct done {
    bool& flag;
    ~done() { flag = false; }
  } reset{s.flushing};
  std::size_t ran = 0;
  while (!s.queue.empty()) {
    auto write = std::move(s.queue.front());
    s.queue.pop_front();
    ++ran;
    write();
  }
  return ran;
}

std::size_t send_phase::pending() noexcept {
  return mine().queue.size();
}

} // namespace troupe::transport
