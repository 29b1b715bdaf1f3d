#include "apps/troupe-sim/pd_rendezvous.hpp"

#include "transport/upstream_exchange.hpp"
#include "transport/upstream_pool.hpp"

#include <boost/asio/steady_timer.hpp>

namespace troupe::sim {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto retry_after = 20ms;

/// Ignores the body of a poll answer: the status says it all.
class discard_sink final : public transport::response_sink {
public:
  bool on_head(const transport::response_head&) override { return true; }
  bool on_body(std::string_view) override { return true; }
  void on_complete() override {}
};

} // namespace

/// One `await`: a poll loop per target, under one deadline.
class rendezvous_client::session final
    : public rendezvous,
      public std::enable_shared_from_this<rendezvous_client::session> {
public:
  session(rendezvous_client& client, std::vector<rendezvous_target> targets,
          clock::time_point deadline, std::function<void(rendezvous_result)> done)
      : client_(client), targets_(std::move(targets)), deadline_(deadline),
        deadline_timer_(client.ioc_), done_(std::move(done)) {
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      polls_.push_back(std::make_unique<poll>(client.ioc_));
    }
  }

  void start() {
    deadline_timer_.expires_at(deadline_);
    deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (auto self = weak.lock(); self && !ec) {
        self->on_deadline();
      }
    });
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      send_poll(i);
    }
  }

  void cancel() override {
    if (!done_) {
      return;
    }
    done_ = nullptr;
    stop_all();
  }

private:
  struct poll {
    explicit poll(net::io_context& ioc) : retry(ioc) {}
    bool met = false;
    clock::time_point sent_at;
    std::chrono::milliseconds wait{0};
    std::shared_ptr<transport::upstream_exchange> exchange;
    net::steady_timer retry;
  };

  void send_poll(std::size_t i) {
    auto& p = *polls_[i];
    const auto& t = targets_[i];
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clock::now());
    if (!done_ || p.met || remaining <= 0ms) {
      return;
    }
    auto wait = std::min(remaining, poll_limit);
    transport::upstream_call call;
    call.method = transport::http::verb::get;
    call.target = "/bootstrap/rooms/" + t.room + "?wait_ms=" + std::to_string(wait.count());
    call.deadline = clock::now() + wait + 1s;
    p.sent_at = clock::now();
    p.wait = wait;
    p.exchange = transport::upstream_exchange::start(
        client_.pool_for(t.host, t.port), std::move(call), std::make_shared<discard_sink>(),
        [weak = weak_from_this(), i](transport::exchange_result r) {
          if (auto self = weak.lock()) {
            self->on_poll(i, r);
          }
        });
  }

  void on_poll(std::size_t i, const transport::exchange_result& r) {
    auto& p = *polls_[i];
    p.exchange.reset();
    if (!done_ || p.met) {
      return;
    }
    if (r.status == transport::exchange_status::ok && r.http_status == 200) {
      p.met = true;
      ++met_;
      if (met_ == targets_.size()) {
        finish();
      }
      return;
    }
    if (r.status == transport::exchange_status::ok && clock::now() - p.sent_at >= p.wait / 2) {
      return send_poll(i); // a long poll ran out: the room is not ready yet, ask again
    }
    // Not reachable (yet: the prefill worker may still be starting), or an answer that came
    // back at once without waiting: not a bootstrap server we know. Retry a little later.
    last_error_ = r.status == transport::exchange_status::ok
                      ? "HTTP " + std::to_string(r.http_status)
                      : std::string(transport::to_string(r.status)) + " " + r.detail;
    p.retry.expires_after(retry_after);
    p.retry.async_wait([weak = weak_from_this(), i](boost::system::error_code ec) {
      if (auto self = weak.lock(); self && !ec) {
        self->send_poll(i);
      }
    });
  }

  void on_deadline() {
    if (!done_) {
      return;
    }
    rendezvous_result res;
    res.met = met_;
    res.timed_out = targets_.size() - met_;
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (!polls_[i]->met) {
        const auto& t = targets_[i];
        res.detail = "bootstrap room " + t.room + " was not ready at " + t.host + ":" +
                     std::to_string(t.port) + " in time" +
                     (last_error_.empty() ? "" : " (last error: " + last_error_ + ")");
        break;
      }
    }
    complete(std::move(res));
  }

  void finish() {
    rendezvous_result res;
    res.met = met_;
    complete(std::move(res));
  }

  void complete(rendezvous_result res) {
    auto done = std::exchange(done_, nullptr);
    stop_all();
    if (done) {
      done(std::move(res));
    }
  }

  void stop_all() {
    deadline_timer_.cancel();
    for (auto& p : polls_) {
      p->retry.cancel();
      if (auto ex = std::exchange(p->exchange, nullptr)) {
        ex->cancel();
      }
    }
  }

  rendezvous_client& client_;
  std::vector<rendezvous_target> targets_;
  std::vector<std::unique_ptr<poll>> polls_;
  clock::time_point deadline_;
  net::steady_timer deadline_timer_;
  std::function<void(rendezvous_result)> done_;
  std::size_t met_ = 0;
  std::string last_error_;
};

rendezvous_client::rendezvous_client(net::io_context& ioc) : ioc_(ioc) {}

rendezvous_client::~rendezvous_client() {
  for (auto& [_, pool] : pools_) {
    pool->close_idle();
  }
}

std::shared_ptr<transport::upstream_pool> rendezvous_client::pool_for(const std::string& host,
                                                                      std::uint16_t port) {
  auto key = host + ":" + std::to_string(port);
  auto& pool = pools_[key];
  if (!pool) {
    pool = std::make_shared<transport::upstream_pool>(ioc_, host, port, 32);
  }
  return pool;
}

std::shared_ptr<rendezvous> rendezvous_client::await(std::vector<rendezvous_target> targets,
                                                     std::chrono::milliseconds timeout,
                                                     std::function<void(rendezvous_result)> done) {
  auto s =
      std::make_shared<session>(*this, std::move(targets), clock::now() + timeout, std::move(done));
  s->start();
  return s;
}

} // namespace troupe::sim
