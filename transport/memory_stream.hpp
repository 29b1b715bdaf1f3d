#pragma once

// A connection without a socket: two ends of an in-memory byte stream, each an asio
// AsyncReadStream and AsyncWriteStream on an executor of its own choosing (a strand or the
// io_context's). What one end writes, the other reads; closing an end is what closing a socket
// is to its peer (it reads the end of the stream, and its writes fail). The fuzz harnesses run
// the HTTP server's and the upstream client's real reading code over it: no kernel, no
// connect and accept, nothing that outlives the input (docs/fuzzing.md). Writes complete at
// once (the buffer has no limit), so flow control and write timeouts are not exercised here.
//
// The stream tracks no outstanding work: an io_context is kept running by whoever drives it.
// Completions are posted, never run inside the initiating call, as a socket's are.

#include "transport/http_types.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace troupe::transport {

class memory_stream {
public:
  using executor_type = net::any_io_executor;
  using error_code = boost::system::error_code;

  /// Two connected ends, on `a` and on `b`.
  static std::pair<memory_stream, memory_stream> pair(executor_type a, executor_type b) {
    auto ab = std::make_shared<pipe>();
    auto ba = std::make_shared<pipe>();
    return {memory_stream{std::move(a), ba, ab}, memory_stream{std::move(b), ab, ba}};
  }

  memory_stream(memory_stream&&) noexcept = default;
  memory_stream& operator=(memory_stream&&) noexcept = default;
  ~memory_stream() { close(); }

  executor_type get_executor() const noexcept { return ex_; }

  /// Reads what the peer wrote and this end has not read; the end of the stream once the peer
  /// closed and everything is read.
  template <class MutableBuffers, class Handler>
  auto async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    return net::async_initiate<Handler, void(error_code, std::size_t)>(
        [this](auto h, const MutableBuffers& b) {
          if (!in_) {
            return complete(std::move(h), net::error::bad_descriptor, 0);
          }
          in_->reader =
              std::make_unique<read_op<MutableBuffers, decltype(h)>>(ex_, b, std::move(h));
          in_->serve();
        },
        handler, buffers);
  }

  /// Hands all of `buffers` to the peer at once; fails once the peer closed.
  template <class ConstBuffers, class Handler>
  auto async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    return net::async_initiate<Handler, void(error_code, std::size_t)>(
        [this](auto h, const ConstBuffers& b) {
          if (!out_) {
            return complete(std::move(h), net::error::bad_descriptor, 0);
          }
          if (out_->reader_gone) {
            return complete(std::move(h), net::error::broken_pipe, 0);
          }
          std::size_t n = 0;
          for (auto it = net::buffer_sequence_begin(b); it != net::buffer_sequence_end(b); ++it) {
            net::const_buffer piece = *it;
            out_->bytes.append(static_cast<const char*>(piece.data()), piece.size());
            n += piece.size();
          }
          complete(std::move(h), {}, n);
          out_->serve();
        },
        handler, buffers);
  }

  /// Closes this end: a read pending here ends with `operation_aborted`, the peer reads the end
  /// of the stream after what was written, and its writes fail.
  void close() {
    if (out_) {
      out_->writer_gone = true;
      out_->serve();
      out_.reset();
    }
    if (in_) {
      in_->reader_gone = true;
      if (auto op = std::move(in_->reader)) {
        op->finish(net::error::operation_aborted, 0);
      }
      in_.reset();
    }
  }

  /// True until `close`.
  bool is_open() const noexcept { return in_ != nullptr; }

  // -- for the side that drives a test --

  /// Hands `bytes` to the peer as a write would (nothing when the peer closed).
  void write(std::string_view bytes) {
    if (out_ && !out_->reader_gone) {
      out_->bytes.append(bytes);
      out_->serve();
    }
  }

  /// What the peer wrote that this end has not read (no read of this end may be pending).
  std::string_view received() const noexcept {
    if (!in_) {
      return {};
    }
    return std::string_view{in_->bytes}.substr(in_->read);
  }

  /// The peer closed its end.
  bool peer_closed() const noexcept { return !in_ || in_->writer_gone; }

private:
  /// A read waiting for bytes, type-erased.
  struct pending_read {
    virtual ~pending_read() = default;
    /// Copies what it can from `bytes` and completes; the bytes it took.
    virtual std::size_t take(std::string_view bytes) = 0;
    virtual void finish(error_code ec, std::size_t n) = 0;
  };

  template <class Buffers, class Handler> struct read_op final : pending_read {
    read_op(executor_type ex, const Buffers& b, Handler h)
        : ex(std::move(ex)), buffers(b), handler(std::move(h)) {}
    std::size_t take(std::string_view bytes) override {
      auto n = net::buffer_copy(buffers, net::buffer(bytes.data(), bytes.size()));
      finish({}, n);
      return n;
    }
    void finish(error_code ec, std::size_t n) override {
      complete_on(ex, std::move(handler), ec, n);
    }
    executor_type ex;
    Buffers buffers;
    Handler handler;
  };

  /// One direction of the stream.
  struct pipe {
    std::string bytes;
    std::size_t read = 0;     ///< Of `bytes`, what the reader took.
    bool writer_gone = false; ///< The writing end closed: end of stream after `bytes`.
    bool reader_gone = false; ///< The reading end closed: writes fail.
    std::unique_ptr<pending_read> reader;

    /// Completes the pending read if there is something for it.
    void serve() {
      if (!reader) {
        return;
      }
      if (read < bytes.size()) {
        auto op = std::move(reader);
        read += op->take(std::string_view{bytes}.substr(read));
        if (read == bytes.size()) {
          bytes.clear();
          read = 0;
        }
      } else if (writer_gone) {
        std::move(reader)->finish(net::error::eof, 0);
        reader.reset();
      }
    }
  };

  memory_stream(executor_type ex, std::shared_ptr<pipe> in, std::shared_ptr<pipe> out)
      : ex_(std::move(ex)), in_(std::move(in)), out_(std::move(out)) {}

  template <class Handler>
  static void complete_on(const executor_type& ex, Handler&& h, error_code ec, std::size_t n) {
    auto target = net::get_associated_executor(h, ex);
    net::post(ex, net::bind_executor(
                      target, [h = std::forward<Handler>(h), ec, n]() mutable { h(ec, n); }));
  }

  template <class Handler> void complete(Handler&& h, error_code ec, std::size_t n) {
    complete_on(ex_, std::forward<Handler>(h), ec, n);
  }

  executor_type ex_;
  std::shared_ptr<pipe> in_;  ///< What this end reads.
  std::shared_ptr<pipe> out_; ///< What this end writes.
};

} // namespace troupe::transport
