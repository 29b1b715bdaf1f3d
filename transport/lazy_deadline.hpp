#pragma once

#include "transport/http_types.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace troupe::transport {

/// The deadline of whatever a connection is doing now, on one timer that is re-armed lazily.
/// Moving the deadline later (the next exchange of a kept-alive connection, due later than the
/// last) costs two stores; the timer, when it rings early, re-arms itself for the deadline then
/// in force. It is re-armed at once only to ring sooner. Per-operation expiries (Beast's
/// `tcp_stream::expires_at`) cost a timer wait, a cancel and a cancelled handler per read and
/// write; this costs none while deadlines only move later.
///
/// What is watched is a `lazy_deadline::target`, held weakly: once it is gone, or `clear`ed,
/// the timer runs out and stays unarmed. Lives on one executor (a connection's strand): every
/// call there.
class lazy_deadline {
public:
  using clock = std::chrono::steady_clock;

  /// What a deadline ends.
  class target {
  public:
    virtual ~target() = default;

    /// The deadline passed (called once per `watch`, on the executor).
    virtual void on_deadline() = 0;
  };

  explicit lazy_deadline(net::any_io_executor ex) : st_(std::make_shared<state>(std::move(ex))) {}

  /// `who` must be done by `at`: its `on_deadline` runs once `at` has passed, unless `watch`
  /// or `clear` came first.
  void watch(clock::time_point at, std::weak_ptr<target> who) {
    st_->at = at;
    st_->who = std::move(who);
    if (!st_->armed || at < st_->expiry) {
      arm(st_);
    }
  }

  /// Nothing to watch any more: an armed timer runs out without effect.
  void clear() noexcept { st_->who.reset(); }

  /// Nothing to watch, and the timer stops now (the connection closes).
  void cancel() {
    st_->who.reset();
    if (st_->armed) {
      st_->timer.cancel();
    }
  }

  /// The timer is armed (for tests).
  bool armed() const noexcept { return st_->armed; }

private:
  struct state {
    explicit state(net::any_io_executor ex) : timer(std::move(ex)) {}
    net::steady_timer timer;
    clock::time_point at;     ///< The deadline in force.
    clock::time_point expiry; ///< What the timer is armed for.
    std::weak_ptr<target> who;
    std::uint32_t gen = 0; ///< Of the newest wait: an older one was superseded.
    bool armed = false;
  };

  // The handler holds the state weakly: destroying the connection destroys the timer, whose
  // pending wait then ends with operation_aborted and finds nothing.
  static void arm(const std::shared_ptr<state>& st) {
    st->armed = true;
    st->expiry = st->at;
    st->timer.expires_at(st->at); // a wait armed for later ends aborted: it finds a newer gen
    st->timer.async_wait(
        [weak = std::weak_ptr<state>(st), gen = ++st->gen](boost::system::error_code ec) {
          auto st = weak.lock();
          if (!st || gen != st->gen) {
            return;
          }
          st->armed = false;
          if (ec) {
            return;
          }
          auto who = st->who.lock();
          if (!who) {
            return; // nothing in progress: stay unarmed until the next watch
          }
          if (clock::now() < st->at) {
            return arm(st); // the deadline moved on since the timer was armed
          }
          st->who.reset();
          who->on_deadline();
        });
  }

  std::shared_ptr<state> st_;
};

} // namespace troupe::transport
