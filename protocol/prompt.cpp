#include "protocol/prompt.hpp"

#include "protocol/validation.hpp"

namespace troupe::protocol {

std::span<const std::string_view> prompt_fields(operation op) noexcept {
  return info(op).prompt;
}

prompt_spans find_prompt(operation op, const request_facts& facts, std::string_view body) noexcept {
  prompt_spans out;
  auto names = prompt_fields(op);
  auto watched = watched_fields(op);
  std::size_t part = 0;
  for (auto name : names) {
    for (std::size_t i = 0; i < watched.size() && i < facts.fields.size(); ++i) {
      if (watched[i] != name) {
        continue;
      }
      auto& f = facts.fields[i];
      if (f.kind != json_kind::absent && f.kind != json_kind::null &&
          f.offset + f.length <= body.size()) {
        out.parts[part++] = body.substr(f.offset, f.length);
      }
      break;
    }
  }
  return out;
}

} // namespace troupe::protocol
