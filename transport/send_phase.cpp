#include "transport/send_phase.hpp"

#include <utility>
#include <vector>

namespace troupe::transport {

namespace {

/// A deferred write: `run(owner.get())`. Two pointers and a function, no allocation of its own
/// (a `std::function` holding a `shared_ptr` allocated one per write: two per request).
struct deferred {
  std::shared_ptr<void> owner;
  void (*run)(void*) = nullptr;
};

struct thread_sends {
  bool deferring = false;
  bool flushing = false;
  /// Runs from `head` on; emptied (its capacity kept) when a flush has run it all.
  std::vector<deferred> queue;
  std::size_t head = 0;
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
  if (!mine().deferring) {
    return write();
  }
  enqueue(std::make_shared<std::function<void()>>(std::move(write)),
          [](void* p) { (*static_cast<std::function<void()>*>(p))(); });
}

void send_phase::enqueue(std::shared_ptr<void> owner, void (*run)(void*)) {
  mine().queue.push_back(deferred{std::move(owner), run});
}

std::size_t send_phase::flush() {
  auto& s = mine();
  if (s.flushing) {
    return 0; // a write that flushes: the running flush takes what it queued
  }
  s.flushing = true;
  struct done {
    thread_sends& s;
    ~done() {
      // What ran leaves the queue (all of it, but after a write that threw); the rest waits.
      s.queue.erase(s.queue.begin(), s.queue.begin() + static_cast<std::ptrdiff_t>(s.head));
      s.head = 0;
      s.flushing = false;
    }
  } reset{s};
  std::size_t ran = 0;
  while (s.head < s.queue.size()) {
    // Moved out first: the write may defer another, and the vector grow under it.
    auto write = std::move(s.queue[s.head++]);
    ++ran;
    write.run(write.owner.get());
  }
  return ran;
}

std::size_t send_phase::pending() noexcept {
  auto& s = mine();
  return s.queue.size() - s.head;
}

} // namespace troupe::transport
