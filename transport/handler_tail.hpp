#pragma once

#include <array>
#include <cstddef>

namespace troupe::transport {

/// Work that a socket handler causes, run on the same thread as soon as the handler's own work
/// is done, before asio returns to its reactor. A handler that ends a request's read (a client
/// request, a worker's answer) usually wakes an actor; posted, that job would wait behind the
/// reactor and cost a pass of it (an `epoll_wait`) per request and per answer. A socket
/// handler opens a tail for its duration; the actor scheduler (gateway/asio_scheduler.cpp)
/// defers to it what it would have posted. Tails nest: an inner one adds to the outermost, and
/// what runs in a tail may defer more to it. Nothing is deferred where no tail is open (the
/// caller posts as before), nor once `capacity` items wait.
class handler_tail {
public:
  /// A deferred item: `run(owner, item)`.
  using work = void (*)(void* owner, void* item);

  /// Items a tail holds; further ones are posted by their caller.
  static constexpr std::size_t capacity = 16;

  handler_tail() noexcept {
    if (open_ == nullptr) {
      open_ = this;
    }
  }

  /// Runs what was deferred, in order, then closes the tail (the outermost one only).
  ~handler_tail() {
    if (open_ != this) {
      return;
    }
    for (std::size_t i = 0; i < size_; ++i) { // `size_` grows while items run
      items_[i].run(items_[i].owner, items_[i].item);
    }
    open_ = nullptr;
  }

  handler_tail(const handler_tail&) = delete;
  handler_tail& operator=(const handler_tail&) = delete;

  /// Defers `run(owner, item)` to the tail open on this thread; false when none is open or it
  /// is full (then the caller does what it would have done without one).
  static bool defer(work run, void* owner, void* item) noexcept {
    auto* t = open_;
    if (t == nullptr || t->size_ == capacity) {
      return false;
    }
    t->items_[t->size_++] = entry{run, owner, item};
    return true;
  }

  /// True while a tail is open on this thread.
  static bool open() noexcept { return open_ != nullptr; }

private:
  struct entry {
    work run;
    void* owner;
    void* item;
  };

  std::array<entry, capacity> items_;
  std::size_t size_ = 0;
  static inline thread_local handler_tail* open_ = nullptr;
};

} // namespace troupe::transport
