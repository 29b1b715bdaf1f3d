#pragma once

#include "transport/flow_control.hpp"
#include "transport/reply_channel.hpp"
#include "transport/response_wire.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace troupe::transport {

/// What a reply channel writes to: its connection. Every call runs on the connection's strand
/// (`executor`) and names the response by its sequence number: a call for a response that is
/// no longer the current one does nothing.
class reply_target {
public:
  virtual ~reply_target() = default;

  /// The connection's strand.
  virtual net::any_io_executor executor() = 0;

  /// Queues `item` of response `seq`; `ends_response`: it is the last.
  virtual void deliver(std::uint64_t seq, write_item item, bool ends_response) = 0;

  /// Names the producer of response `seq`'s stream.
  virtual void set_source(std::uint64_t seq, std::weak_ptr<flow_source> source) = 0;

  /// Closes the connection once what is queued is written, leaving response `seq` unfinished.
  virtual void abort_response(std::uint64_t seq) = 0;
};

/// The reply channel of one request on one connection.
class session_reply final : public reply_channel,
                            public std::enable_shared_from_this<session_reply> {
public:
  session_reply(std::weak_ptr<reply_target> target, std::uint64_t seq)
      : target_(std::move(target)), seq_(seq) {}

  void respond(response res) override;
  void begin_stream(unsigned status, header_list headers) override;
  void respond_serialized(serialized_head head, std::string body) override;
  void begin_stream_serialized(serialized_head head) override;
  void write_chunk(std::string data) override;
  void end_stream() override;
  void set_flow_source(std::weak_ptr<flow_source> source) override;
  void on_disconnect(std::function<void()> f) override;
  bool stopped_reading() const override { return stopped_reading_.load(std::memory_order_acquire); }
  void abort() override;

  // -- called by the connection, on its strand --

  /// The client left.
  void client_gone() {
    gone_ = true;
    client_left_ = true;
    source_.reset();
    if (auto f = std::exchange(on_disconnect_, nullptr)) {
      f();
    }
  }

  /// The client is dropped for reading nothing (`client_gone` follows).
  void client_stalled() { stopped_reading_.store(true, std::memory_order_release); }

  /// The response was handed over completely.
  void finished() {
    gone_ = true;
    on_disconnect_ = nullptr;
    source_.reset();
  }

  /// No further call takes effect.
  bool gone() const noexcept { return gone_; }

  /// The response's place on its connection.
  std::uint64_t seq() const noexcept { return seq_; }

  /// The producer of the stream, if it is still there.
  std::shared_ptr<flow_source> source() const { return source_.lock(); }
  void source(std::weak_ptr<flow_source> s) { source_ = std::move(s); }

private:
  template <class F> void on_strand(F&& f);

  std::weak_ptr<reply_target> target_;
  std::uint64_t seq_;
  // Touched on the strand only.
  bool gone_ = false;        // no further call takes effect
  bool client_left_ = false; // ... because the client disconnected
  std::function<void()> on_disconnect_;
  std::weak_ptr<flow_source> source_;
  std::atomic<bool> stopped_reading_{false}; // read from any thread
};

} // namespace troupe::transport
