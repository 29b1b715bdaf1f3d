#pragma once

#include "protocol/request_scan.hpp"
#include "protocol/routes.hpp"

#include <array>
#include <span>
#include <string_view>

namespace troupe::protocol {

/// The prompt of a request as the cache-aware policy matches it: the raw JSON bytes of the
/// body's prompt-bearing top-level fields (quotes, brackets and escapes as the client sent
/// them), in prompt order: system text before the conversation. Views into the body.
struct prompt_spans {
  std::array<std::string_view, 2> parts; ///< Unused parts are empty.

  /// Total bytes.
  std::size_t size() const noexcept { return parts[0].size() + parts[1].size(); }

  /// True when the request carries no prompt.
  bool empty() const noexcept { return size() == 0; }
};

/// The prompt-bearing top-level fields of `op`, in prompt order (at most two): chat
/// `messages`; completions `prompt`; Anthropic `system`, `messages`; Responses `instructions`,
/// `input`; SGLang `/generate` `text`, `input_ids`. Empty for other operations. Every one is
/// among `watched_fields(op)` (`operation_info::prompt`).
std::span<const std::string_view> prompt_fields(operation op) noexcept;

/// Where the prompt of `body` lies, from the facts of its scan with `watched_fields(op)`:
/// no second parse. Fields absent or `null` contribute nothing.
prompt_spans find_prompt(operation op, const request_facts& facts, std::string_view body) noexcept;

} // namespace troupe::protocol
