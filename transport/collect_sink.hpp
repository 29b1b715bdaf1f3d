#pragma once

#include "transport/upstream_exchange.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace troupe::transport {

/// A response sink that keeps the whole response, refusing bodies over a limit.
class collect_sink final : public response_sink {
public:
  /// A sink keeping at most `limit` body bytes.
  explicit collect_sink(std::size_t limit) : limit_(limit) {}

  bool on_head(const response_head& head) override {
    status_ = head.result_int();
    content_type_ = std::string(head[http::field::content_type]);
    auto len = head[http::field::content_length];
    std::size_t n = 0;
    if (std::from_chars(len.data(), len.data() + len.size(), n).ec == std::errc{}) {
      body_.reserve(std::min(limit_, n)); // (the parser checked the length; it only sizes)
    }
    return true;
  }

  bool on_body(std::string_view piece) override {
    if (body_.size() + piece.size() > limit_) {
      return false;
    }
    body_.append(piece);
    return true;
  }

  void on_complete() override { complete_ = true; }

  unsigned status() const noexcept { return status_; }
  const std::string& content_type() const noexcept { return content_type_; }
  const std::string& body() const noexcept { return body_; }
  std::string take_body() noexcept { return std::move(body_); }
  bool complete() const noexcept { return complete_; }

private:
  std::size_t limit_;
  unsigned status_ = 0;
  std::string content_type_;
  std::string body_;
  bool complete_ = false;
};

} // namespace troupe::transport
