#include "protocol/prompt.hpp"

#include "protocol/validation.hpp"

namespace troupe::protocol {

namespace {

constexpr std::array<std::string_view, 1> chat_prompt{"messages"};
constexpr std::array<std::string_view, 1> completions_prompt{"prompt"};
constexpr std::array<std::string_view, 2> messages_prompt{"system", "messages"};
constexpr std::array<std::string_view, 2> responses_prompt{"instructions", "input"};
constexpr std::array<std::string_view, 2> generate_prompt{"text", "input_ids"};

} // namespace

std::span<const std::string_view> prompt_fields(operation op) noexcept {
  switch (op) {
  case operation::chat_completions:
    return chat_prompt;
  case operation::completions:
    return completions_prompt;
  case operation::messages:
    return messages_prompt;
  case operation::responses_create:
    return responses_prompt;
  case operation::generate:
    return generate_prompt;
  default:
    return {};
  }
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
