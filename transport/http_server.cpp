#include "transport/http_server.hpp"

#include "transport/server_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

namespace troupe::transport {

http::status status_of(inbound_status status) noexcept {
  switch (status) {
  case inbound_status::payload_too_large:
    return http::status::payload_too_large;
  case inbound_status::header_too_large:
  case inbound_status::too_many_headers:
    return http::status::request_header_fields_too_large;
  case inbound_status::header_timeout:
    return http::status::request_timeout;
  case inbound_status::complete:
    break;
  }
  return http::status::ok;
}

// -- listener --

struct http_server::impl : std::enable_shared_from_this<impl> {
  using error_code = boost::system::error_code;

  impl(net::io_context& ioc, server_options opts, request_handler handler)
      : ioc_(ioc), opts_(with_stats(std::move(opts))),
        handler_(std::make_shared<const request_handler>(std::move(handler))),
        acceptor_(net::make_strand(ioc)), pause_(acceptor_.get_executor()) {}

  /// `opts`, with counters of its own when it came without.
  static std::shared_ptr<const server_options> with_stats(server_options opts) {
    if (!opts.conn_stats) {
      opts.conn_stats = std::make_shared<connection_stats>();
    }
    return std::make_shared<const server_options>(std::move(opts));
  }

  error_code start() {
    error_code ec;
    tcp::endpoint ep;
    if (auto addr = net::ip::make_address(opts_->host, ec); !ec) {
      ep = tcp::endpoint{addr, opts_->port};
    } else {
      // A host name: resolve it once, at start-up.
      tcp::resolver resolver{ioc_};
      auto results = resolver.resolve(opts_->host, std::to_string(opts_->port), ec);
      if (ec) {
        return ec;
      }
      ep = results.begin()->endpoint();
    }
    acceptor_.open(ep.protocol(), ec);
    if (ec) {
      return ec;
    }
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    acceptor_.bind(ep, ec);
    if (ec) {
      return ec;
    }
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return ec;
    }
    port_ = acceptor_.local_endpoint().port();
    do_accept();
    return {};
  }

  void do_accept() {
    auto ex = opts_->use_strands ? net::any_io_executor{net::make_strand(ioc_)}
                                 : net::any_io_executor{ioc_.get_executor()};
    acceptor_.async_accept(ex, [self = shared_from_this()](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !self->acceptor_.is_open()) {
        return;
      }
      if (!ec) {
        self->on_accept(std::move(socket));
      } else if (out_of_resources(ec)) {
        // Accepting again at once would fail again at once (a busy loop): the connections
        // waiting in the backlog wait a moment, the ones open go on.
        self->opts_->conn_stats->accept_errors.fetch_add(1, std::memory_order_relaxed);
        self->pause_.expires_after(std::chrono::milliseconds(100));
        self->pause_.async_wait([self](error_code ec) {
          if (!ec && self->acceptor_.is_open()) {
            self->do_accept();
          }
        });
        return;
      }
      self->do_accept();
    });
  }

  static bool out_of_resources(const error_code& ec) {
    return ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
           ec == net::error::no_memory || ec == std::errc::too_many_files_open_in_system;
  }

  void on_accept(tcp::socket socket) {
    auto& stats = *opts_->conn_stats;
    auto open = stats.open.fetch_add(1, std::memory_order_relaxed);
    if (opts_->max_connections > 0 && static_cast<std::size_t>(open) >= opts_->max_connections) {
      // Over the limit: closed at once (a reset: no lingering state), before any byte is read.
      stats.open.fetch_sub(1, std::memory_order_relaxed);
      stats.refused.fetch_add(1, std::memory_order_relaxed);
      error_code ignored;
      socket.set_option(net::socket_base::linger(true, 0), ignored);
      socket.close(ignored);
      return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (opts_->tls) {
      std::make_shared<server_session<tls_stream>>(tls_stream{std::move(socket), *opts_->tls},
                                                   opts_, handler_)
          ->start();
    } else {
      std::make_shared<server_session<tcp::socket>>(std::move(socket), opts_, handler_)->start();
    }
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->acceptor_.close(ignored);
      self->pause_.cancel();
    });
  }

  net::io_context& ioc_;
  std::shared_ptr<const server_options> opts_;
  std::shared_ptr<const request_handler> handler_;
  tcp::acceptor acceptor_;
  net::steady_timer pause_; ///< Accepting waits on it after running out of resources.
  std::uint16_t port_ = 0;
};

http_server::http_server(net::io_context& ioc, server_options opts, request_handler handler)
    : impl_(std::make_shared<impl>(ioc, std::move(opts), std::move(handler))) {}

http_server::~http_server() {
  if (impl_) {
    impl_->stop();
  }
}

boost::system::error_code http_server::start() {
  return impl_->start();
}

std::uint16_t http_server::port() const noexcept {
  return impl_->port_;
}

void http_server::stop() {
  impl_->stop();
}

} // namespace troupe::transport
