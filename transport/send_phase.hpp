#pragma once

// Sends in a second phase of an io loop's pass. A handler that would write to a socket at once
// queues the write instead, and the loop runs the queue when it has run the handlers ready now
// (or every `batch` handlers, at the latest). HAProxy and nginx work in these two phases too:
// every ready socket is read, then what it woke is processed and the sends go out together.
// What it saves is the peers' wake-ups: a worker or client woken by the first send of a pass
// finds the rest already queued when it runs, where sends spread over the pass let it drain and
// block between two of them (docs/performance.md, "Peers woken per request": behind troupe's
// one-at-a-time sends the fake fleet blocked 4x as often per request as behind HAProxy, and on
// a VM each of its wake-ups is an exit to the hypervisor paid inside the sender's `sendmsg`).
//
// Only while its loop is busy: a request that comes alone is answered at once (at c=1 a send
// put off by even a few microseconds met its peer's vCPU asleep: +19 µs p50 on the 12-05 VM).
// Only a thread whose loop opened a `send_phase::scope` defers: everywhere else (tests, the
// simulator, a thread that runs actors after the io loop ended) `defer` runs the write at once.
// A write deferred on a thread runs on that thread: callers defer only what they could have
// run there, on the one io thread (several io threads use strands, and do not batch).

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

namespace troupe::transport {

class send_phase {
public:
  /// While it lives, writes deferred on this thread wait for `flush` (`batch` > 0), or run at
  /// once (`batch` 0: the scope changes nothing). Scopes do not nest.
  class scope {
  public:
    explicit scope(std::size_t batch);
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

    /// True when this thread defers writes.
    explicit operator bool() const noexcept { return batch_ > 0; }

    /// Handlers run between two flushes, at most.
    std::size_t batch() const noexcept { return batch_; }

    /// Whether writes wait for the flush from now on (the loop's call: only while it is busy;
    /// a no-op for a scope of batch 0).
    void defer_writes(bool on) const noexcept;

  private:
    std::size_t batch_;
  };

  /// True when writes deferred on this thread wait for its loop's flush.
  static bool deferring() noexcept;

  /// Runs `write` at the end of this thread's pass, after the writes deferred before it; at
  /// once when this thread does not defer.
  static void defer(std::function<void()> write);

  /// `(self.get()->*Method)()`, deferred as `defer` does, without an allocation: the queue
  /// keeps `self` (what keeps the object alive until its write runs) and a plain function. The
  /// request path's form (a session's response, an exchange's request: one each per request).
  template <auto Method, class T> static void defer(std::shared_ptr<T> self) {
    if (!deferring()) {
      ((*self).*Method)();
      return;
    }
    enqueue(std::shared_ptr<void>(std::move(self)),
            [](void* p) { (static_cast<T*>(p)->*Method)(); });
  }

  /// Runs the deferred writes in order, and those they defer in turn, until none is left.
  /// Returns how many ran. A write that throws leaves the ones behind it queued.
  static std::size_t flush();

  /// Writes deferred and not yet run on this thread.
  static std::size_t pending() noexcept;

private:
  static void enqueue(std::shared_ptr<void> owner, void (*run)(void*));
};

} // namespace troupe::transport
