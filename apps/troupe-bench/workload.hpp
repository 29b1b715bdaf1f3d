#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace troupe::bench {

/// One message of a conversation: `system`, `user` or `assistant`.
struct message {
  std::string role;
  std::string content;
};

/// What one request asks, independent of the API it is sent with.
struct prompt {
  std::string system;                 ///< System prompt; empty for none.
  std::vector<message> messages;      ///< The conversation, ending with the user's turn.
  std::optional<long> max_tokens;     ///< Overrides `--max-tokens` when set.
  std::optional<nlohmann::json> body; ///< A whole request body, sent as it is (JSONL `body`).
  std::string key;                    ///< Session/user id (sent in `--routing-key-header`).
};

/// A source of prompts. Sources never run dry: they cycle (a file) or generate (the generator).
class workload {
public:
  virtual ~workload() = default;

  /// The next prompt to send.
  virtual prompt next() = 0;

  /// A one-line description for the report.
  virtual std::string describe() const = 0;

  /// Sources that replay a fixed list have that many slots (0: every prompt is new); their
  /// request bodies are serialized once per slot and target.
  virtual std::size_t slots() const noexcept { return 0; }

  /// The slot of the next prompt (sources with slots only).
  virtual std::size_t next_slot() { return 0; }

  /// The prompt in `slot`.
  virtual const prompt& at(std::size_t slot) const = 0;
};

} // namespace troupe::bench
