#pragma once

// A reply channel that records what a handler or sink sent, for tests without sockets.

#include "transport/reply_channel.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace troupe::test {

class recording_reply final : public transport::reply_channel {
public:
  void respond(transport::response res) override {
    std::lock_guard guard{mx_};
    full_ = std::move(res);
    ended_ = true;
  }

  void begin_stream(unsigned status, transport::header_list headers) override {
    std::lock_guard guard{mx_};
    stream_status_ = status;
    stream_headers_ = std::move(headers);
  }

  void write_chunk(std::string data) override {
    std::lock_guard guard{mx_};
    chunks_.push_back(std::move(data));
  }

  void end_stream() override {
    std::lock_guard guard{mx_};
    ended_ = true;
  }

  void set_flow_source(std::weak_ptr<transport::flow_source> source) override {
    std::lock_guard guard{mx_};
    source_ = std::move(source);
  }

  /// The producer named by `set_flow_source`, if it is still there.
  std::shared_ptr<transport::flow_source> flow_source() const {
    std::lock_guard guard{mx_};
    return source_.lock();
  }

  void on_disconnect(std::function<void()> f) override {
    std::lock_guard guard{mx_};
    disconnect_ = std::move(f);
  }

  void abort() override {
    std::lock_guard guard{mx_};
    aborted_ = true;
  }

  bool aborted() const {
    std::lock_guard guard{mx_};
    return aborted_;
  }

  /// Simulates the client leaving.
  void disconnect() {
    std::function<void()> f;
    {
      std::lock_guard guard{mx_};
      f = std::move(disconnect_);
    }
    if (f) {
      f();
    }
  }

  std::optional<transport::response> full() const {
    std::lock_guard guard{mx_};
    return full_;
  }
  std::vector<std::string> chunks() const {
    std::lock_guard guard{mx_};
    return chunks_;
  }
  unsigned stream_status() const {
    std::lock_guard guard{mx_};
    return stream_status_;
  }
  transport::header_list stream_headers() const {
    std::lock_guard guard{mx_};
    return stream_headers_;
  }
  bool ended() const {
    std::lock_guard guard{mx_};
    return ended_;
  }

private:
  mutable std::mutex mx_;
  std::optional<transport::response> full_;
  unsigned stream_status_ = 0;
  transport::header_list stream_headers_;
  std::vector<std::string> chunks_;
  bool ended_ = false;
  bool aborted_ = false;
  std::function<void()> disconnect_;
  std::weak_ptr<transport::flow_source> source_;
};

} // namespace troupe::test
