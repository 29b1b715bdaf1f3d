#pragma once

#include "apps/troupe-sim/api_family.hpp"

namespace troupe::sim {

/// OpenAI `POST /v1/chat/completions`: `messages`, `n`, `max_tokens` /
/// `max_completion_tokens`, `stream` with `stream_options.include_usage`, `logprobs`, `tools`
/// with `tool_choice` (a tool call when required, named, or when the last user message names a
/// tool). Streams `chat.completion.chunk` deltas ending with `data: [DONE]`.
class chat_api final : public api_family {
public:
  parse_result parse(const nlohmann::json& body, sim_context& ctx) override;
  void begin(gen_state& st, sim_context& ctx) override;
  std::string body(const gen_state& st) override;
  void open(const gen_state& st, event_sink& out) override;
  void token(const gen_state& st, std::size_t seq, event_sink& out) override;
  void finish(const gen_state& st, std::size_t seq, event_sink& out) override;
  void close(const gen_state& st, event_sink& out) override;

private:
  nlohmann::json chunk(const gen_state& st, nlohmann::json choices) const;
};

} // namespace troupe::sim
