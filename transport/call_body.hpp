#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace troupe::transport {

/// The body of a request sent upstream: bytes of its own, or bytes shared with whoever keeps
/// them (`shared`). A request sends its client's body to each attempt and to both legs of a
/// prefill/decode pair without copying it (a copy per attempt of a 100 KB prompt is 100 KB).
class call_body {
public:
  call_body() = default;
  call_body(std::string bytes) : own_(std::move(bytes)) {}
  call_body(std::string_view bytes) : own_(bytes) {}
  call_body(const char* bytes) : own_(bytes) {}

  /// A body whose bytes `owner` keeps alive and nobody changes while it is sent.
  static call_body shared(std::shared_ptr<const std::string> owner) {
    call_body b;
    b.shared_ = std::move(owner);
    return b;
  }

  /// The bytes, valid as long as this body is and is not moved from.
  std::string_view view() const noexcept { return shared_ ? std::string_view{*shared_} : own_; }
  std::size_t size() const noexcept { return view().size(); }
  bool empty() const noexcept { return view().empty(); }

  friend bool operator==(const call_body& a, std::string_view b) noexcept { return a.view() == b; }

private:
  std::string own_;
  std::shared_ptr<const std::string> shared_;
};

} // namespace troupe::transport
