#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/error.hpp"

namespace troupe::protocol {

/// What routing needs to know about a JSON request body, read without building a DOM.
struct request_facts {
  std::optional<std::string> model; ///< Top-level `model`, when it is a string.
  bool stream = false;              ///< Top-level `"stream": true`.
};

/// The outcome of `scan_request`: facts, or the client error that explains why not.
struct scan_result {
  request_facts facts;
  std::optional<api_error> error;
};

/// Validates `body` as one JSON object and reads the routing facts (`model`, `stream`) from its
/// top level. Fails with `invalid_json` for malformed JSON and `bad_request` for a body that is
/// not an object or a fact of the wrong type (`"stream": "yes"`, `"model": 3`).
scan_result scan_request(std::string_view body);

} // namespace troupe::protocol
