#include "actors/admission.hpp"

#include <vector>

namespace troupe::actors {

std::string_view to_string(admission_verdict v) noexcept {
  switch (v) {
  case admission_verdict::admitted:
    return "admitted";
  case admission_verdict::queued:
    return "queued";
  case admission_verdict::queue_full:
    return "queue_full";
  case admission_verdict::queue_timeout:
    return "queue_timeout";
  }
  return "admitted";
}

// -- admission_permit --

admission_permit& admission_permit::operator=(admission_permit&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::move(other.owner_);
  }
  return *this;
}

void admission_permit::release() noexcept {
  // A moved-from shared_ptr is empty: a second release finds nothing to give back.
  if (auto owner = std::move(owner_)) {
    owner->release();
  }
}

// -- admission_control --

admission_control::admission_control(admission_limits limits, alarm set_alarm,
                                     std::function<clock::time_point()> now)
    : limits_(limits), alarm_(std::move(set_alarm)), now_(std::move(now)) {}

admission_control::entry admission_control::enter(waiter w) {
  entry e;
  std::lock_guard guard{mx_};
  // While anyone waits, every slot is taken (a freed slot goes to the queue's head), so a
  // newcomer can only queue behind them.
  if (active_ < limits_.max_active && queue_.empty()) {
    ++active_;
    ++counts_.admitted;
    e.verdict = admission_verdict::admitted;
    e.permit = admission_permit{shared_from_this()};
    return e;
  }
  if (queue_.size() >= limits_.max_queued) {
    ++counts_.rejected_full;
    e.verdict = admission_verdict::queue_full;
    return e;
  }
  e.verdict = admission_verdict::queued;
  e.ticket = next_ticket_++;
  auto deadline = now_() + limits_.queue_timeout;
  queue_.emplace(e.ticket, waiting{deadline, std::move(w)});
  // Every waiter waits as long, so the oldest one's deadline is the earliest: one alarm, for
  // the head, serves the whole queue.
  if (!alarm_set_) {
    alarm_set_ = true;
    alarm_(deadline);
  }
  return e;
}

bool admission_control::cancel(std::uint64_t ticket) {
  decltype(queue_)::node_type gone; // destroyed after the lock is released
  std::lock_guard guard{mx_};
  gone = queue_.extract(ticket);
  if (gone.empty()) {
    return false;
  }
  ++counts_.abandoned;
  return true;
}

void admission_control::wake() {
  std::vector<waiter> expired;
  {
    std::lock_guard guard{mx_};
    alarm_set_ = false;
    auto now = now_();
    while (!queue_.empty() && queue_.begin()->second.deadline <= now) {
      expired.push_back(std::move(queue_.begin()->second.w));
      queue_.erase(queue_.begin());
      ++counts_.rejected_timeout;
    }
    // The head may have left (admitted, cancelled) before its deadline: the alarm then rings
    // early once, and is set again for the new head.
    if (!queue_.empty()) {
      alarm_set_ = true;
      alarm_(queue_.begin()->second.deadline);
    }
  }
  for (auto& w : expired) {
    if (w) {
      w(admission_verdict::queue_timeout, admission_permit{});
    }
  }
}

void admission_control::release() noexcept {
  waiter next;
  admission_permit handed;
  {
    std::lock_guard guard{mx_};
    if (queue_.empty()) {
      --active_;
      return;
    }
    // The slot passes to the oldest waiter: `active_` stays as it is. A waiter past its
    // deadline whose alarm has not rung yet still gets it: the slot is there now.
    next = std::move(queue_.begin()->second.w);
    queue_.erase(queue_.begin());
    ++counts_.admitted_queued;
    handed = admission_permit{shared_from_this()};
  }
  if (next) {
    next(admission_verdict::admitted, std::move(handed));
  }
}

admission_stats admission_control::stats() const {
  std::lock_guard guard{mx_};
  auto s = counts_;
  s.active = active_;
  s.queued = queue_.size();
  return s;
}

} // namespace troupe::actors
