#pragma once

// Admission control: how many data-plane requests run on this node at once, and who waits.
// Plain code with a short lock, no actor: see docs/architecture.md ("Admission control").

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace troupe::services {

/// The limits of admission control (`--max-concurrent-requests`, `--queue-size`,
/// `--queue-timeout-secs`, `--rate-limit-tokens-per-second`).
struct admission_limits {
  std::size_t max_active = 1;                     ///< Requests holding a slot at once (> 0).
  std::size_t max_queued = 0;                     ///< Requests waiting for one; 0: none wait.
  std::chrono::milliseconds queue_timeout{60000}; ///< Longest wait for a slot.
  /// Requests let in per second, sustained (a token bucket of `max_active` tokens refilled at
  /// this rate; each admission takes one for good). 0: no rate limit, only the slots.
  double rate_per_second = 0;
};

/// What became of a request at the door.
enum class admission_verdict {
  admitted,      ///< It holds a slot.
  queued,        ///< It waits for one.
  queue_full,    ///< Refused at once: no free slot and no room to wait.
  queue_timeout, ///< Refused after waiting `queue_timeout`.
};

/// Stable name of `v` (`queue_full`, ...), as metric labels use it.
std::string_view to_string(admission_verdict v) noexcept;

/// Counts of an admission control, as the metrics and the admin endpoint show them.
struct admission_stats {
  std::size_t active = 0;             ///< Slots held now.
  std::size_t queued = 0;             ///< Requests waiting now.
  std::uint64_t admitted = 0;         ///< Admitted at once, since start.
  std::uint64_t admitted_queued = 0;  ///< Admitted after waiting.
  std::uint64_t rejected_full = 0;    ///< Refused: queue full.
  std::uint64_t rejected_timeout = 0; ///< Refused: waited too long.
  std::uint64_t abandoned = 0;        ///< Left the queue because their client left.
  double tokens = 0;                  ///< Rate tokens in the bucket now (0 without a rate).
};

class admission_control;

/// One request's slot. Move-only; gives the slot back exactly once: on `release()` or on
/// destruction, whichever comes first. An empty permit holds nothing.
class admission_permit {
public:
  admission_permit() noexcept = default;
  admission_permit(admission_permit&& other) noexcept = default;
  admission_permit& operator=(admission_permit&& other) noexcept;
  admission_permit(const admission_permit&) = delete;
  admission_permit& operator=(const admission_permit&) = delete;
  ~admission_permit() { release(); }

  /// Gives the slot back now (to the oldest waiter, if any). Does nothing the second time.
  void release() noexcept;

  /// True while the permit holds a slot.
  bool held() const noexcept { return owner_ != nullptr; }

private:
  friend class admission_control;
  explicit admission_permit(std::shared_ptr<admission_control> owner) noexcept
      : owner_(std::move(owner)) {}

  std::shared_ptr<admission_control> owner_;
};

/// At most `max_active` requests hold a slot; up to `max_queued` more wait in arrival order
/// (FIFO), each at most `queue_timeout`. A freed slot passes straight to the oldest waiter, so
/// a newcomer never overtakes the queue. With a rate, a request also needs a token of the
/// bucket: at most `max_active` at once after a quiet spell, `rate_per_second` sustained; a
/// waiter with a free slot waits for the next token. Safe from any thread; callbacks run outside
/// the lock. Time comes from `now`, and timeouts and tokens arrive when the owner calls `wake()`
/// at the alarm time it was given last: the owner decides what a clock and an alarm are (an
/// asio timer in the gateway, plain variables in tests).
class admission_control : public std::enable_shared_from_this<admission_control> {
public:
  using clock = std::chrono::steady_clock;

  /// Told once what became of a queued request: `admitted` with its permit, or
  /// `queue_timeout` with an empty one.
  using waiter = std::function<void(admission_verdict, admission_permit)>;

  /// Asks for a `wake()` at the given time (the oldest waiter's deadline, or the next token
  /// when that is sooner), replacing the alarm asked for before, which is always later. Called
  /// under the lock: it must not call back into this object.
  using alarm = std::function<void(clock::time_point)>;

  /// How a request fared at the door.
  struct entry {
    admission_verdict verdict = admission_verdict::queue_full;
    admission_permit permit;  ///< Holds the slot when `admitted`.
    std::uint64_t ticket = 0; ///< Names the place in the queue when `queued` (for `cancel`).
  };

  /// Build with `std::make_shared`: permits keep their admission control alive.
  admission_control(admission_limits limits, alarm set_alarm,
                    std::function<clock::time_point()> now = clock::now);

  admission_control(const admission_control&) = delete;
  admission_control& operator=(const admission_control&) = delete;

  /// A request arrives. `admitted`: the entry's permit holds its slot. `queued`: `w` will be
  /// called exactly once, later, unless the request is cancelled first. `queue_full`: nothing
  /// more happens. `w` is dropped unless the request is queued.
  entry enter(waiter w);

  /// The client of the queued request `ticket` left: its place is freed at once and its waiter
  /// dropped (outside the lock) without being called. False when it does not wait (any more).
  bool cancel(std::uint64_t ticket);

  /// The alarm went off: waiters a slot and a token are there for are let in, then those whose
  /// deadline passed are told `queue_timeout`, oldest first.
  void wake();

  /// The counts now.
  admission_stats stats() const;

  /// The limits it enforces.
  const admission_limits& limits() const noexcept { return limits_; }

private:
  friend class admission_permit;

  /// A permit gave its slot back.
  void release() noexcept;

  struct waiting {
    clock::time_point deadline;
    waiter w;
  };

  /// Under the lock: adds the tokens earned since the last refill (up to `max_active`).
  void refill(clock::time_point now);

  /// Under the lock: true when a request may take a token now (always without a rate). The
  /// margin absorbs rounding: the alarm for a token rings when the refill has earned it.
  bool token_ready() const noexcept {
    return limits_.rate_per_second <= 0 || tokens_ >= 1.0 - 1e-9;
  }

  /// Under the lock: an admission takes its token.
  void take_token() noexcept;

  /// Under the lock: asks for an alarm at the head's deadline, or at its token when a slot is
  /// free for it, unless one is set for that time or sooner.
  void arm(clock::time_point now);

  const admission_limits limits_;
  const alarm alarm_;
  const std::function<clock::time_point()> now_;

  mutable std::mutex mx_;
  std::size_t active_ = 0;
  std::map<std::uint64_t, waiting> queue_; ///< By ticket, which grows: arrival order.
  std::uint64_t next_ticket_ = 1;
  clock::time_point alarm_at_ = clock::time_point::max(); ///< max: no alarm set.
  double tokens_ = 0;                                     ///< Rate tokens (unused without a rate).
  clock::time_point refilled_at_{}; ///< When `tokens_` was last brought up to date.
  admission_stats counts_;          ///< The cumulative counters (`active`/`queued` are read above).
};

} // namespace troupe::services
