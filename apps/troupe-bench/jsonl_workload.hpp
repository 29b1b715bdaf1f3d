#pragma once

#include "apps/troupe-bench/workload.hpp"

#include <istream>
#include <string>

namespace troupe::bench {

/// Prompts read from a JSONL file, one JSON object a line, sent in file order and cycled:
/// `{"prompt": "..."}` (one user message), `{"messages": [{"role","content"}, ...]}` (a
/// conversation, a `system` message becoming the system prompt), optionally `"system"`,
/// `"max_tokens"` and `"user"` (the routing key); or `{"body": {...}}`, a request body sent
/// as it is. Blank lines are skipped.
class jsonl_workload final : public workload {
public:
  /// Reads every prompt from `in`; returns nothing and sets `why` (with the line number) on
  /// the first bad line, or when the input holds no prompt.
  static std::unique_ptr<jsonl_workload> read(std::istream& in, const std::string& name,
                                              std::string& why);

  prompt next() override;
  std::string describe() const override;
  std::size_t slots() const noexcept override { return prompts_.size(); }
  std::size_t next_slot() override;
  const prompt& at(std::size_t slot) const override { return prompts_[slot]; }

  std::size_t size() const noexcept { return prompts_.size(); }

private:
  std::vector<prompt> prompts_;
  std::size_t next_ = 0;
  std::string name_;
};

/// Parses one JSONL line's object into a prompt; the reason on failure.
std::optional<prompt> parse_prompt_line(const nlohmann::json& line, std::string& why);

} // namespace troupe::bench
