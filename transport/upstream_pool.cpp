#include "transport/upstream_pool.hpp"

#include "protocol/url.hpp"

#include <sys/socket.h>

namespace troupe::transport {

namespace {

/// Connections idle for less than this are reused without a liveness probe: no server closes
/// a keep-alive connection that fast, and a stale one is retried transparently anyway.
constexpr auto probe_after_idle = std::chrono::seconds(2);

// True when the peer has not closed an idle connection: nothing to read yet (EAGAIN). A
// closed peer reads as EOF (0); unexpected bytes on an idle connection also disqualify it.
bool still_open(upstream_connection& conn) {
  if (std::chrono::steady_clock::now() - conn.idle_since < probe_after_idle) {
    return true;
  }
  if (!conn.over_tcp()) {
    return true; // an in-memory stream: a closed one fails on first use, and is retried
  }
  char probe;
  auto fd = conn.tcp().native_handle();
  auto n = ::recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

} // namespace

upstream_pool::upstream_pool(net::io_context& ioc, std::string host, std::uint16_t port,
                             std::size_t max_idle, std::shared_ptr<net::ssl::context> tls,
                             bool use_strands)
    : ioc_(ioc), host_(std::move(host)), port_(port), max_idle_(max_idle), tls_(std::move(tls)),
      use_strands_(use_strands), authority_(protocol::host_header(host_, port_, tls_ != nullptr)) {}

upstream_pool::connection_ptr upstream_pool::acquire() {
  for (;;) {
    connection_ptr conn;
    {
      std::lock_guard guard{mx_};
      if (idle_.empty()) {
        break;
      }
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    if (still_open(*conn)) {
      conn->reused = true;
      return conn;
    }
    discard(std::move(conn));
  }
  if (use_strands_) {
    return fresh(net::make_strand(ioc_));
  }
  return fresh(ioc_.get_executor());
}

upstream_pool::connection_ptr upstream_pool::fresh(upstream_connection::executor_type ex) {
#ifdef TROUPE_MEMORY_STREAM_SESSIONS
  if (dial_) {
    auto conn = std::make_unique<upstream_connection>(ex, dial_(ex));
    note_connected(*conn);
    return conn;
  }
#endif
  return std::make_unique<upstream_connection>(std::move(ex), tls_.get());
}

void upstream_pool::release(connection_ptr conn) {
  conn->buffer.clear();
  conn->idle_since = std::chrono::steady_clock::now();
  {
    std::lock_guard guard{mx_};
    if (idle_.size() < max_idle_) {
      idle_.push_back(std::move(conn));
      return;
    }
  }
  discard(std::move(conn));
}

void upstream_pool::note_connected(upstream_connection& conn) noexcept {
  if (!conn.connected) {
    conn.connected = true;
    open_.fetch_add(1, std::memory_order_relaxed);
  }
}

void upstream_pool::discard(connection_ptr conn) {
  if (!conn) {
    return;
  }
  if (conn->connected) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    conn->connected = false;
  }
  // No TLS close_notify: the connection is dropped either way, and waiting for the peer's
  // answer would hold it open.
  conn->close();
}

void upstream_pool::close_idle() {
  std::vector<connection_ptr> idle;
  {
    std::lock_guard guard{mx_};
    idle.swap(idle_);
  }
  for (auto& c : idle) {
    discard(std::move(c));
  }
}

std::vector<tcp::endpoint> upstream_pool::endpoints() const {
  std::lock_guard guard{mx_};
  return endpoints_;
}

void upstream_pool::set_endpoints(std::vector<tcp::endpoint> eps) {
  std::lock_guard guard{mx_};
  endpoints_ = std::move(eps);
}

void upstream_pool::forget_endpoints() {
  std::lock_guard guard{mx_};
  endpoints_.clear();
}

std::size_t upstream_pool::idle_connections() const {
  std::lock_guard guard{mx_};
  return idle_.size();
}

} // namespace troupe::transport
