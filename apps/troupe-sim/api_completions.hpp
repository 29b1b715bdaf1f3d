#pragma once

#include "apps/troupe-sim/api_family.hpp"

namespace troupe::sim {

/// OpenAI `POST /v1/completions`: `prompt` as a string, a list of strings, token ids or lists of
/// token ids; `n`, `max_tokens`, `stream` with `stream_options.include_usage`. Choice `i*n + j`
/// is the j-th sequence of prompt i.
class completions_api final : public api_family {
public:
  parse_result parse(const nlohmann::json& body, sim_context& ctx) override;
  void begin(gen_state& st, sim_context& ctx) override;
  std::string body(const gen_state& st) override;
  void token(const gen_state& st, std::size_t seq, event_sink& out) override;
  void finish(const gen_state& st, std::size_t seq, event_sink& out) override;
  void close(const gen_state& st, event_sink& out) override;

private:
  nlohmann::json chunk(const gen_state& st, const sequence& s, std::string_view text) const;
};

} // namespace troupe::sim
