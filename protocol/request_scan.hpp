#pragma once

#include "protocol/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::protocol {

/// The JSON type of a value, as the scan saw it.
enum class json_kind : std::uint8_t {
  absent,  ///< The field is not in the body.
  null,    ///< `null`.
  boolean, ///< `true` or `false`.
  integer, ///< A number without fraction or exponent.
  number,  ///< Any other number.
  string,  ///< A string.
  array,   ///< An array.
  object,  ///< An object.
};

/// Readable name of `k` (`"an integer"`, `"a string"`, ...), for error messages.
std::string_view describe(json_kind k) noexcept;

/// What the scan saw of one watched top-level field (see `scan_request`).
struct field_fact {
  json_kind kind = json_kind::absent;
  std::int64_t integer = 0; ///< The value of an integer (clamped to the int64 range).
  bool empty = false;       ///< An empty string, array or object.
  std::size_t offset = 0;   ///< Where its raw JSON value starts in the body.
  std::size_t length = 0;   ///< Bytes of its raw JSON value (quotes, brackets, escapes as sent).
};

/// What routing needs to know about a JSON request body, read without building a DOM.
struct request_facts {
  std::optional<std::string> model; ///< Top-level `model`, when it is a string.
  bool stream = false;              ///< Top-level `"stream": true`.
  /// Responses API: top-level `previous_response_id`, when it is a string.
  std::optional<std::string> previous_response_id;
  std::vector<field_fact> fields; ///< One per watched field, in the order asked.
};

/// The outcome of `scan_request`: facts, or the client error that explains why not.
struct scan_result {
  request_facts facts;
  std::optional<api_error> error;
};

/// Validates `body` as one JSON object and reads the routing facts (`model`, `stream`) from its
/// top level, plus the type (and size, and where its raw value lies) of each top-level field
/// named in `watched`. Fails with `invalid_json` for malformed JSON and `bad_request` for a body
/// that is not an object or a fact of the wrong type (`"stream": "yes"`, `"model": 3`).
scan_result scan_request(std::string_view body, std::span<const std::string_view> watched = {});

} // namespace troupe::protocol
