#include "transport/http_server.hpp"

#include "transport/server_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

namespace troupe::transport {

// -- listener --

struct http_server::impl : std::enable_shared_from_this<impl> {
  using error_code = boost::system::error_code;

  impl(net::io_context& ioc, server_options opts, request_handler handler)
      : ioc_(ioc), opts_(std::make_shared<const server_options>(std::move(opts))),
        handler_(std::make_shared<const request_handler>(std::move(handler))),
        acceptor_(net::make_strand(ioc)) {}

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
      }
      self->do_accept();
    });
  }

  void on_accept(tcp::socket socket) {
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<server_session<beast::tcp_stream>>(beast::tcp_stream{std::move(socket)}, opts_,
                                                        handler_)
        ->start();
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

  net::io_context& ioc_;
  std::shared_ptr<const server_options> opts_;
  std::shared_ptr<const request_handler> handler_;
  tcp::acceptor acceptor_;
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
