#pragma once

// A worker's response head as a `response_sink` sees it: the status and the fields as parsed,
// views into the bytes read (no copy, no allocation per field), valid while `on_head` runs.
// Beast's own header type keeps every field in a node of its own (an allocation and a tree
// insertion per field, ~900 instructions per response of five fields); a head that is read once,
// in order, and thrown away needs none of that.

#include "transport/http_types.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace troupe::transport {

/// One field of a response head: Beast's name for it (`http::field::unknown` for others), its
/// name as written and its value. The accessors are those of a Beast field, so code that reads
/// either (`first_fields`) reads both.
struct head_field {
  http::field known = http::field::unknown; ///< Beast's enum for the name, if it has one.
  std::string_view name_text;               ///< The name as the worker wrote it.
  std::string_view value_text;              ///< The value, without surrounding whitespace.

  /// Beast's enum for the name (`unknown` when it has none).
  http::field name() const noexcept { return known; }
  /// The name as written.
  std::string_view name_string() const noexcept { return name_text; }
  /// The value.
  std::string_view value() const noexcept { return value_text; }
};

/// The status and fields of a response head, in the order they came.
class response_head {
public:
  /// A head over fields held elsewhere (by the parser, during `on_head`).
  response_head(unsigned status, std::span<const head_field> fields) noexcept
      : status_(status), fields_(fields) {}

  /// A Beast header seen as a head; its fields are viewed, not copied, so `h` must outlive
  /// this. For code that builds a head by hand (tests, fakes): the hot path never builds one.
  response_head(const http::response_header<>& h); // NOLINT: implicit on purpose

  response_head(const response_head&) = delete;
  response_head& operator=(const response_head&) = delete;

  /// The status code.
  unsigned result_int() const noexcept { return status_; }

  /// The fields, in order.
  std::span<const head_field>::iterator begin() const noexcept { return fields_.begin(); }
  std::span<const head_field>::iterator end() const noexcept { return fields_.end(); }

  /// The value of the first field `name`, or empty (as Beast's `header[name]`).
  std::string_view operator[](http::field name) const noexcept;

private:
  unsigned status_;
  std::vector<head_field> owned_; ///< Only for a head made from a Beast header.
  std::span<const head_field> fields_;
};

} // namespace troupe::transport
