#pragma once

#include "apps/troupe-bench/workload.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace troupe::bench {

/// The APIs troupe-bench speaks.
enum class api_kind {
  chat,      ///< OpenAI `POST /v1/chat/completions`.
  messages,  ///< Anthropic `POST /v1/messages`.
  responses, ///< OpenAI `POST /v1/responses`.
};

/// `chat`, `messages` or `responses`.
std::string_view to_string(api_kind a) noexcept;

/// The API named `name`, if any.
std::optional<api_kind> parse_api(std::string_view name) noexcept;

/// The request path of `a`.
std::string_view path_of(api_kind a) noexcept;

/// What every request body carries besides the prompt.
struct body_options {
  std::string model;
  bool stream = true;
  long max_tokens = 128;
  bool ignore_eos = false;           ///< SGLang/vLLM's `ignore_eos`: write exactly max tokens.
  std::optional<double> temperature; ///< Sent when set.
};

/// The JSON request body of `p` for `a`. A prompt with a whole `body` is sent as it is, with
/// `model` and `stream` added when it has none.
std::string make_body(api_kind a, const prompt& p, const body_options& o);

} // namespace troupe::bench
