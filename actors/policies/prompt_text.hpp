#pragma once

#include "actors/policies/selection.hpp"

#include <string>
#include <string_view>

namespace troupe::actors {

/// The prompt of `p` as one run of bytes: in place when it is one field, else joined into
/// `scratch` (system text first).
inline std::string_view prompt_text(const prompt_ref& p, std::string& scratch) {
  if (p.parts[1].empty()) {
    return p.parts[0];
  }
  if (p.parts[0].empty()) {
    return p.parts[1];
  }
  scratch.assign(p.parts[0]);
  scratch.append(p.parts[1]);
  return scratch;
}

/// Prompt bytes per token: the gateway does not tokenize, so a token count (smg's
/// `--prefix-token-count`, `--cache-boundaries`) is read as four bytes of prompt each, as smg
/// does for an untokenized request.
inline constexpr std::size_t bytes_per_token = 4;

} // namespace troupe::actors
