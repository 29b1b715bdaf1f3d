#include "apps/troupe-sim/room_board.hpp"

#include <boost/asio/steady_timer.hpp>

namespace troupe::sim {

const char* to_string(room_state s) noexcept {
  switch (s) {
  case room_state::unknown:
    return "unknown";
  case room_state::pending:
    return "pending";
  case room_state::ready:
    return "ready";
  }
  return "unknown";
}

/// One decode worker's wait for a room: called back once, by `ready` or by its timer.
class room_board::waiter final : public room_wait,
                                 public std::enable_shared_from_this<room_board::waiter> {
public:
  waiter(net::io_context& ioc, std::function<void(bool)> done)
      : timer_(ioc), done_(std::move(done)) {}

  void arm(std::chrono::milliseconds limit) {
    timer_.expires_after(limit);
    timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (auto self = weak.lock(); self && !ec) {
        self->fire(false);
      }
    });
  }

  void fire(bool ready) {
    if (auto f = std::exchange(done_, nullptr)) {
      timer_.cancel();
      f(ready);
    }
  }

  void cancel() override {
    done_ = nullptr;
    timer_.cancel();
  }

  ~waiter() override { timer_.cancel(); }

private:
  net::steady_timer timer_;
  std::function<void(bool)> done_;
};

room_board::room_board(net::io_context& ioc, std::size_t capacity)
    : ioc_(ioc), capacity_(capacity == 0 ? 1 : capacity) {}

room_board::~room_board() = default;

room_board::entry& room_board::slot(const std::string& room) {
  auto [it, inserted] = rooms_.try_emplace(room);
  if (inserted) {
    order_.push_back(room);
    while (rooms_.size() > capacity_ && !order_.empty()) {
      auto oldest = std::move(order_.front());
      order_.pop_front();
      if (oldest != room) {
        rooms_.erase(oldest);
      }
    }
  }
  return rooms_[room];
}

void room_board::arrive(const std::string& room) {
  auto& e = slot(room);
  if (e.state == room_state::unknown) {
    e.state = room_state::pending;
  }
}

void room_board::ready(const std::string& room) {
  auto& e = slot(room);
  e.state = room_state::ready;
  auto waiting = std::move(e.waiters);
  e.waiters.clear();
  for (auto& w : waiting) {
    if (auto alive = w.lock()) {
      alive->fire(true);
    }
  }
}

room_state room_board::state(const std::string& room) const {
  auto it = rooms_.find(room);
  return it == rooms_.end() ? room_state::unknown : it->second.state;
}

std::shared_ptr<room_wait> room_board::wait(const std::string& room,
                                            std::chrono::milliseconds limit,
                                            std::function<void(bool)> done) {
  auto w = std::make_shared<waiter>(ioc_, std::move(done));
  if (state(room) == room_state::ready) {
    w->fire(true);
    return w;
  }
  auto& e = slot(room);
  // Drop the entries of waits that ended, so a room polled for long does not grow.
  std::erase_if(e.waiters, [](const auto& weak) { return weak.expired(); });
  e.waiters.push_back(w);
  w->arm(limit);
  return w;
}

std::size_t room_board::waiters() const noexcept {
  std::size_t n = 0;
  for (const auto& [_, e] : rooms_) {
    for (const auto& w : e.waiters) {
      n += w.expired() ? 0 : 1;
    }
  }
  return n;
}

} // namespace troupe::sim
