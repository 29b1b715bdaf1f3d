#pragma once

#include "apps/troupe-sim/api_family.hpp"

namespace troupe::sim {

/// Anthropic `POST /v1/messages`: requires `model`, `max_tokens` and `messages` (errors in
/// Anthropic's format); `system`, `stream`, `tools` with `tool_choice` (`auto`, `any`, `tool`,
/// `none`). Usage splits the prompt into `input_tokens` (computed) and
/// `cache_read_input_tokens`. Streams `message_start` ... `message_stop` named events.
class messages_api final : public api_family {
public:
  protocol::api_format format() const noexcept override { return protocol::api_format::anthropic; }
  parse_result parse(const nlohmann::json& body, sim_context& ctx) override;
  void begin(gen_state& st, sim_context& ctx) override;
  std::string body(const gen_state& st) override;
  void open(const gen_state& st, event_sink& out) override;
  void token(const gen_state& st, std::size_t seq, event_sink& out) override;
  void finish(const gen_state& st, std::size_t seq, event_sink& out) override;
  void close(const gen_state& st, event_sink& out) override;
};

} // namespace troupe::sim
