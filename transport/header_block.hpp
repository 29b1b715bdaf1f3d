#pragma once

#include "transport/http_types.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace troupe::transport {

/// The extra header fields of a request to a worker, serialized as they are added: one string of
/// `name: value\r\n` lines that the request head copies in one piece (no list of string pairs,
/// no allocation per field). Framing and routing are the gateway's: a `Host`, `Content-Length`,
/// `Connection` or `Transfer-Encoding` field is not taken. Names and values are written without
/// CR and LF, so no field can be injected.
class header_block {
public:
  header_block() = default;

  /// The fields of `fields`, in order (tests, and callers with a fixed list).
  header_block(std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

  /// Appends the field `name: value` (nothing for a framing name).
  void add(std::string_view name, std::string_view value);

  /// Appends the field `name: prefix value` (a scheme before a credential, without a temporary).
  void add(std::string_view name, std::string_view prefix, std::string_view value);

  /// Room for `bytes` more bytes of fields.
  void reserve(std::size_t bytes) { lines_.reserve(lines_.size() + bytes); }

  /// The serialized fields, each line ending in CRLF.
  std::string_view bytes() const noexcept { return lines_; }

  /// True when a `Content-Type` field was added.
  bool has_content_type() const noexcept { return content_type_; }

  bool empty() const noexcept { return lines_.empty(); }

  /// The fields as name/value pairs, in order (tests and logs: it allocates).
  header_list list() const;

private:
  /// True when `name` is a framing field the gateway writes itself; notes a content type.
  bool refuse(std::string_view name);

  std::string lines_;
  bool content_type_ = false;
};

} // namespace troupe::transport
