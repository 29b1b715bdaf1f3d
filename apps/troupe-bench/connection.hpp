#pragma once

#include "apps/troupe-bench/api.hpp"
#include "apps/troupe-bench/request_record.hpp"
#include "apps/troupe-bench/target.hpp"
#include "protocol/sse.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace troupe::bench {

/// One keep-alive HTTP/1.1 connection to a target, one request at a time. It times what a
/// client sees: the response's head, every event of a stream as it is read, the end.
class connection : public std::enable_shared_from_this<connection> {
public:
  /// Called once per request with its record, and whether the connection may be reused.
  using done_fn = std::function<void(request_record&&, bool reusable)>;

  connection(boost::asio::any_io_executor ex, const target& t);

  /// Sends `request` (a whole serialized HTTP request) and reads its response; connects
  /// first if needed. A reused connection the server closed meanwhile is reconnected and the
  /// request sent again, once, when not a byte of the response came back.
  void start(std::shared_ptr<const std::string> request, api_kind api,
             bench_clock::time_point deadline, request_record record, done_fn done);

private:
  void do_connect();
  void on_connect(boost::system::error_code ec);
  void do_write();
  void on_write(boost::system::error_code ec);
  void on_read_header(boost::system::error_code ec);
  void do_read_body();
  void on_read_body(boost::system::error_code ec);
  void scan_body(bench_clock::time_point now);
  void on_event(std::string_view raw, bench_clock::time_point now);
  void on_complete();
  bool retry_stale(boost::system::error_code ec);
  void fail(boost::system::error_code ec, bool connecting);
  void finish(outcome o, std::string detail, bool reusable);

  boost::beast::tcp_stream stream_;
  const target& target_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
  protocol::sse_framer framer_;
  bool connected_ = false;
  bool reused_ = false;  ///< This request is not the connection's first.
  bool retried_ = false; ///< The stale-connection retry was spent.

  // -- the request in progress --
  std::shared_ptr<const std::string> request_;
  api_kind api_ = api_kind::chat;
  bench_clock::time_point deadline_;
  request_record record_;
  done_fn done_;
  bench_clock::time_point last_token_;
  bool saw_done_ = false;
  bool saw_error_ = false;
};

} // namespace troupe::bench
