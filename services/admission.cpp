#include "services/admission.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace troupe::services {

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
    : limits_(limits), alarm_(std::move(set_alarm)), now_(std::move(now)) {
  if (limits_.rate_per_second > 0) {
    // A full bucket: after start-up, as after any quiet spell, `max_active` may come at once.
    tokens_ = static_cast<double>(limits_.max_active);
    refilled_at_ = now_();
  }
}

void admission_control::refill(clock::time_point now) {
  if (now <= refilled_at_) {
    return;
  }
  auto earned = std::chrono::duration<double>(now - refilled_at_).count() * limits_.rate_per_second;
  tokens_ = std::min(static_cast<double>(limits_.max_active), tokens_ + earned);
  refilled_at_ = now;
}

void admission_control::take_token() noexcept {
  if (limits_.rate_per_second > 0) {
    tokens_ -= 1.0;
  }
}

void admission_control::arm(clock::time_point now) {
  if (queue_.empty()) {
    return;
  }
  // Every waiter waits as long, so the oldest one's deadline is the earliest: one alarm, for
  // the head, serves the whole queue.
  auto when = queue_.begin()->second.deadline;
  if (active_ < limits_.max_active && !token_ready()) {
    // A slot is free and the head waits for its token: ring when the bucket has one (rounded
    // up, so that the refill then finds a whole token).
    auto missing = std::chrono::duration<double>((1.0 - tokens_) / limits_.rate_per_second);
    when = std::min(when, now + std::chrono::ceil<clock::duration>(missing));
  }
  if (when < alarm_at_) {
    alarm_at_ = when;
    alarm_(when);
  }
}

admission_control::entry admission_control::enter(waiter w) {
  entry e;
  std::lock_guard guard{mx_};
  std::optional<clock::time_point> now;
  if (limits_.rate_per_second > 0) {
    now = now_();
    refill(*now);
  }
  // While anyone waits, a newcomer can only queue behind them: a freed slot goes to the
  // queue's head, and so does the next token.
  if (active_ < limits_.max_active && queue_.empty() && token_ready()) {
    ++active_;
    take_token();
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
  if (!now) {
    now = now_();
  }
  e.verdict = admission_verdict::queued;
  e.ticket = next_ticket_++;
  queue_.emplace(e.ticket, waiting{*now + limits_.queue_timeout, std::move(w)});
  arm(*now);
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
  // Declared before the lock: permits of waiters without a callback go back after it.
  std::vector<std::pair<waiter, admission_permit>> admitted;
  std::vector<waiter> expired;
  {
    std::lock_guard guard{mx_};
    alarm_at_ = clock::time_point::max();
    auto now = now_();
    refill(now);
    // With a rate, a slot may be free while the head waits for its token: it is let in now,
    // even past its deadline (the token is there now), and the next ones while tokens last.
    while (!queue_.empty() && active_ < limits_.max_active && token_ready()) {
      admitted.emplace_back(std::move(queue_.begin()->second.w), admission_permit{});
      queue_.erase(queue_.begin());
      ++active_;
      take_token();
      ++counts_.admitted_queued;
      admitted.back().second = admission_permit{shared_from_this()};
    }
    while (!queue_.empty() && queue_.begin()->second.deadline <= now) {
      expired.push_back(std::move(queue_.begin()->second.w));
      queue_.erase(queue_.begin());
      ++counts_.rejected_timeout;
    }
    // The head may have left (admitted, cancelled) before its deadline: the alarm then rings
    // early once, and is set again for the new head.
    arm(now);
  }
  for (auto& [w, permit] : admitted) {
    if (w) {
      w(admission_verdict::admitted, std::move(permit));
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
    if (limits_.rate_per_second > 0) {
      auto now = now_();
      refill(now);
      if (!token_ready()) {
        // The slot is free but the head's token is not there yet: the alarm lets it in.
        --active_;
        arm(now);
        return;
      }
    }
    // The slot passes to the oldest waiter: `active_` stays as it is. A waiter past its
    // deadline whose alarm has not rung yet still gets it: the slot is there now.
    next = std::move(queue_.begin()->second.w);
    queue_.erase(queue_.begin());
    take_token();
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
  if (limits_.rate_per_second > 0) {
    auto now = now_();
    auto earned = now > refilled_at_ ? std::chrono::duration<double>(now - refilled_at_).count() *
                                           limits_.rate_per_second
                                     : 0.0;
    s.tokens = std::min(static_cast<double>(limits_.max_active), tokens_ + earned);
  }
  return s;
}

} // namespace troupe::services
