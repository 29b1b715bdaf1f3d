#pragma once

#include "transport/http_types.hpp"

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace troupe::sim {

namespace net = transport::net;

/// What a prefill worker knows about a room.
enum class room_state {
  unknown, ///< No prefill request with this room arrived (yet).
  pending, ///< The prefill request arrived; its prompt is being computed.
  ready,   ///< The prompt is computed: a decode worker may take the KV cache over.
};

/// `unknown`, `pending` or `ready`.
const char* to_string(room_state s) noexcept;

/// A wait for a room, cancellable by its owner.
class room_wait {
public:
  virtual ~room_wait() = default;
  /// Drops the wait: its callback will not be called.
  virtual void cancel() = 0;
};

/// The rooms a prefill worker has seen, and the decode workers waiting for them. Bounded: the
/// oldest rooms are forgotten first. Runs on one io_context thread.
class room_board {
public:
  /// A board on `ioc` remembering at most `capacity` rooms.
  explicit room_board(net::io_context& ioc, std::size_t capacity = 100000);
  ~room_board();

  room_board(const room_board&) = delete;
  room_board& operator=(const room_board&) = delete;

  /// A prefill request for `room` arrived.
  void arrive(const std::string& room);

  /// The prefill of `room` finished; its waiters are told.
  void ready(const std::string& room);

  /// The state of `room`.
  room_state state(const std::string& room) const;

  /// Calls `done(true)` as soon as `room` is ready (at once if it is), or `done(false)` when
  /// `limit` passes first. Keep the handle: dropping it cancels the wait.
  std::shared_ptr<room_wait> wait(const std::string& room, std::chrono::milliseconds limit,
                                  std::function<void(bool ready)> done);

  /// Rooms remembered.
  std::size_t size() const noexcept { return rooms_.size(); }

  /// Waits in progress.
  std::size_t waiters() const noexcept;

private:
  class waiter;
  struct entry {
    room_state state = room_state::unknown;
    std::vector<std::weak_ptr<waiter>> waiters;
  };

  entry& slot(const std::string& room);

  net::io_context& ioc_;
  std::size_t capacity_;
  std::unordered_map<std::string, entry> rooms_;
  std::deque<std::string> order_; // oldest first
};

} // namespace troupe::sim
