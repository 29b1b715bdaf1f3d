#pragma once

#include "apps/troupe-sim/api_family.hpp"

namespace troupe::sim {

/// SGLang's native `POST /generate`: `text` or `input_ids` (a list of either for a batch),
/// `sampling_params`, `stream`, `return_logprob`, `rid`. Answers `{"text","meta_info"}` (a list
/// for a batch or `n` > 1); streams cumulative text chunks ending with `data: [DONE]`.
class generate_api final : public api_family {
public:
  parse_result parse(const nlohmann::json& body, sim_context& ctx) override;
  void begin(gen_state& st, sim_context& ctx) override;
  std::string body(const gen_state& st) override;
  void token(const gen_state& st, std::size_t seq, event_sink& out) override;
  void finish(const gen_state& st, std::size_t seq, event_sink& out) override;
  void close(const gen_state& st, event_sink& out) override;

  /// SGLang's default `max_new_tokens`.
  static constexpr std::size_t default_max_new_tokens = 128;

private:
  nlohmann::json result(const gen_state& st, const sequence& s) const;
};

} // namespace troupe::sim
