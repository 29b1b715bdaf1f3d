#pragma once

#include "protocol/error.hpp"
#include "protocol/request_scan.hpp"
#include "protocol/routes.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace troupe::protocol {

/// The first stage of every data-plane request: what an operation requires of its body, checked
/// from the facts of one SAX scan (no DOM). The rules are the operation's row
/// (`operation_info::rules`, protocol/routes.cpp); operations without rules (SGLang
/// `/generate`, bodiless routes) pass. The errors are the route's own 400s, e.g.
/// Anthropic's `max_tokens: Field required`.

/// The top-level fields `validate` needs the scan to watch for `op`, and its prompt fields
/// (`operation_info::watched`): pass them to `scan_request`.
std::span<const std::string_view> watched_fields(operation op) noexcept;

/// Checks `facts` (scanned with `watched_fields(op)`) against the rules of `op`; the client
/// error of the first rule broken, if any.
std::optional<api_error> validate(operation op, const request_facts& facts);

/// Scans `body` and validates it for `op`: the facts, or the client error (invalid JSON, a
/// wrong type, a missing field).
scan_result scan_and_validate(operation op, std::string_view body);

} // namespace troupe::protocol
