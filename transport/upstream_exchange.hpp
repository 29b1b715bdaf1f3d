#pragma once

#include "transport/call_body.hpp"
#include "transport/flow_control.hpp"
#include "transport/header_block.hpp"
#include "transport/http_types.hpp"
#include "transport/lazy_deadline.hpp"
#include "transport/response_head.hpp"
#include "transport/response_parser.hpp"
#include "transport/upstream_pool.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace troupe::transport {

/// One request to send upstream.
struct upstream_call {
  http::verb method = http::verb::post;
  std::string target;   ///< Path and query, e.g. `/v1/chat/completions`.
  call_body body;       ///< Sent as is (JSON for every data-plane route).
  header_block headers; ///< Extra request headers, already chosen by the caller.
  std::chrono::steady_clock::time_point deadline; ///< The whole exchange must end by then.
};

/// How an exchange ended.
enum class exchange_status {
  ok,             ///< The response was read completely.
  connect_failed, ///< No connection could be made (refused, unreachable, resolve failed).
  broken,         ///< The connection failed mid-exchange: reset, EOF, protocol error.
  timeout,        ///< The deadline passed.
  cancelled,      ///< `cancel()` was called.
  rejected,       ///< The sink refused the response (e.g. a size limit).
  /// The gateway could not open a connection for lack of its own resources (file
  /// descriptors, local ports, memory): nothing reached the worker, and it is not the
  /// worker's failure.
  no_resources,
};

/// True when `ec` says the gateway itself ran out of something a new connection needs: file
/// descriptors (EMFILE, ENFILE), buffer space or memory, or a free local port (EADDRNOTAVAIL
/// from `connect`).
bool out_of_local_resources(const beast::error_code& ec) noexcept;

/// Readable name of `s`.
const char* to_string(exchange_status s) noexcept;

/// What the owner learns when an exchange ends (exactly once).
struct exchange_result {
  exchange_status status = exchange_status::ok;
  unsigned http_status = 0;                ///< The upstream status, 0 when no head arrived.
  bool head_received = false;              ///< The sink saw `on_head`.
  std::size_t body_bytes = 0;              ///< Body bytes delivered to the sink.
  std::chrono::microseconds first_byte{0}; ///< From start to the response head.
  std::string detail;                      ///< Error text for logs.
};

/// Receives an upstream response as it arrives, on the exchange's strand.
class response_sink {
public:
  virtual ~response_sink() = default;

  /// The exchange reading the response, once before `on_head`. A sink relaying the body to a
  /// client hands it to the client's reply channel (`reply_channel::set_flow_source`), which
  /// pauses it while the client falls behind. The default ignores it.
  virtual void on_source(std::weak_ptr<flow_source> source) { (void)source; }

  /// The status line and headers arrived (views into the bytes read: copy what is kept).
  /// Return false to abort the exchange (`rejected`).
  virtual bool on_head(const response_head& head) = 0;

  /// A piece of the body, delivered as soon as it is parsed (a view into the read buffer).
  /// Return false to abort (`rejected`).
  virtual bool on_body(std::string_view piece) = 0;

  /// The whole body was read.
  virtual void on_complete() = 0;
};

/// The request line and header fields of an upstream request (Host, the given headers minus
/// framing ones, Content-Type and Content-Length when `body_size` is set; HTTP/1.1 keeps the
/// connection alive without saying so).
std::string serialize_request_head(http::verb method, std::string_view target,
                                   std::string_view authority, const header_block& headers,
                                   std::optional<std::size_t> body_size);

/// An exchange in flight as its owner holds it: it can be aborted from any thread.
class exchange_control {
public:
  virtual ~exchange_control() = default;

  /// Aborts the exchange; its end (`cancelled`, unless it ended first) is reported as usual.
  virtual void cancel() = 0;
};

/// One request/response with a worker over a pooled keep-alive connection. A reused connection
/// that turns out closed before any response byte is retried once on a fresh connection.
/// As a `flow_source` it stops reading the body while paused (the deadline and `cancel` still
/// end it then).
class upstream_exchange : public std::enable_shared_from_this<upstream_exchange>,
                          public flow_source,
                          public exchange_control,
                          public lazy_deadline::target {
public:
  using done_handler = std::function<void(exchange_result)>;

  /// Starts `call` on `pool`; `sink` gets the response, `done` the outcome (exactly once).
  static std::shared_ptr<upstream_exchange> start(std::shared_ptr<upstream_pool> pool,
                                                  upstream_call call,
                                                  std::shared_ptr<response_sink> sink,
                                                  done_handler done);

  /// Aborts the exchange: the connection is closed and `done` gets `cancelled`. Thread-safe.
  void cancel() override;

  /// Stops reading the body after the piece in hand. Thread-safe.
  void pause() override;

  /// Reads the body again (posted onto the connection's strand). Thread-safe.
  void resume() override;

  upstream_exchange(std::shared_ptr<upstream_pool> pool, upstream_call call,
                    std::shared_ptr<response_sink> sink, done_handler done);

  /// The call's deadline passed (the connection's `lazy_deadline`): ends it as `timeout`.
  void on_deadline() override;

private:
  void run();
  void watch_deadline();
  void do_resolve();
  void do_connect();
  /// Connects to `eps[i]`, then on failure to the ones after it; `last` is the latest
  /// failure. (Not asio's ranged `async_connect`: a socket it cannot open ends it as
  /// `operation_aborted`, which hides the gateway's own EMFILE behind a failing worker.)
  void connect_to(std::shared_ptr<const std::vector<tcp::endpoint>> eps, std::size_t i,
                  beast::error_code last);
  void do_handshake();
  void do_write();
  void write_request(); // do_write's write, now
  void do_read_head();
  /// Reads more of the response head (after `do_read_head` made the parser).
  void read_head_some();
  /// Parses what a read of the head brought; the sink gets the head once it is whole.
  void on_head_bytes(beast::error_code ec, std::size_t n);
  /// Hands the parsed head to the sink (its bytes still in the buffer); false if refused.
  bool deliver_head();
  /// Parses the body bytes in the buffer (the parser hands them to the sink), then reads more.
  void read_body();
  void do_read_body();
  /// After a read of the body: false when the exchange ended (the sink refused a piece, or
  /// `ec` is a failure).
  bool body_read_ok(beast::error_code ec);
  void park();
  void on_resume();
  void on_failure(beast::error_code ec, exchange_status status);
  void finish(exchange_status status, std::string detail = {});
  exchange_status classify(beast::error_code ec) const;

  std::shared_ptr<upstream_pool> pool_;
  upstream_pool::connection_ptr conn_;
  upstream_connection::executor_type conn_executor_; ///< The strand of every connection used.
  std::string head_; ///< Request line and header fields, serialized.
  call_body body_;
  std::chrono::steady_clock::time_point deadline_;
  std::shared_ptr<response_sink> sink_;
  done_handler done_;
  std::optional<response_parser> parser_;
  std::chrono::steady_clock::time_point started_;
  exchange_result result_;
  bool retried_ = false;
  bool finished_ = false;
  bool paused_ = false;    ///< Asked to stop reading the body.
  bool parked_ = false;    ///< Stopped: no read pending until `resume`.
  bool timed_out_ = false; ///< The deadline passed: what fails now fails as `timeout`.
  std::atomic<bool> cancelled_{false};
};

} // namespace troupe::transport
