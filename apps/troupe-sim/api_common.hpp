#pragma once

#include "apps/troupe-sim/gen_request.hpp"
#include "protocol/error.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace troupe::sim {

// Shared parsing, validation and rendering of the API families.

/// The request's `model` when it is a string, else `fallback`.
std::string model_of(const nlohmann::json& body, const std::string& fallback);

/// Reads a list of token ids (non-negative integers) into `out`; false when `list` is not an
/// array or holds anything else.
bool read_token_ids(const nlohmann::json& list, std::vector<token_id>& out);

/// An error to send: its code, what the client is told and the field to blame.
protocol::api_error make_error(protocol::error_code code, std::string message,
                               std::string param = {});

/// A 400 `bad_request` with `message`, blaming `param`.
protocol::api_error bad_request(std::string message, std::string param = {});

/// JSON text of `j`; invalid UTF-8 in strings is replaced rather than thrown about.
std::string dump(const nlohmann::json& j);

/// Reads an optional non-negative integer field; absent or null gives nothing. Sets `err` when
/// present but not a non-negative integer.
std::optional<std::size_t> opt_count(const nlohmann::json& body, const char* key,
                                     std::optional<protocol::api_error>& err);

/// Reads an optional boolean field (absent or null: `fallback`); sets `err` when ill-typed.
bool opt_bool(const nlohmann::json& body, const char* key, bool fallback,
              std::optional<protocol::api_error>& err);

/// The text of a message `content`: a string, or the `text` of its text parts (`text`,
/// `input_text`, `output_text`), joined with newlines. Other parts are ignored.
std::string content_text(const nlohmann::json& content);

/// `prefix` followed by 24 random hex digits (`chatcmpl-3f9c...`).
std::string make_id(std::string_view prefix, std::mt19937_64& rng);

/// Unix time in seconds.
std::int64_t unix_now() noexcept;

/// Unix time in seconds, with a fraction.
double unix_now_precise() noexcept;

/// Arguments a tool call would plausibly carry for a JSON schema: every required property (all
/// when none is marked required) with a value of its type. Deterministic.
nlohmann::json example_arguments(const nlohmann::json& schema);

/// A tool the client offers, whatever the API's shape.
struct tool_def {
  std::string name;      ///< Function name.
  nlohmann::json schema; ///< JSON schema of its arguments.
};

/// What the client allows the model to do with its tools.
enum class tool_mode {
  none,      ///< Never call a tool.
  automatic, ///< Call one if the conversation asks for it.
  required,  ///< Call one.
  named,     ///< Call the named one.
};

/// The tool the simulated model calls, if any: the named one; for `required` the one the last
/// user message mentions, else the first; for `automatic` the one the last user message
/// mentions (by name), else none.
const tool_def* choose_tool(const std::vector<tool_def>& tools, tool_mode mode,
                            std::string_view named, std::string_view last_user_text);

/// Reads the PD bootstrap fields of a request with `count` prompts: scalars, or lists (one per
/// prompt) when the request is a batch. Empty when the request has none.
std::variant<std::vector<bootstrap_info>, protocol::api_error>
parse_bootstrap(const nlohmann::json& body, std::size_t count, bool batch);

/// Reads vLLM's `kv_transfer_params` (absent or null: nothing). Fields it does not know are
/// ignored, as vLLM's connectors ignore them; known ones of the wrong type are refused.
std::variant<std::optional<kv_params>, protocol::api_error>
parse_kv_transfer_params(const nlohmann::json& body);

/// Splits `http://host:port` (or `host:port`) into its host and port; false when it is not one.
bool split_host_port(std::string_view addr, std::string& host, std::uint16_t& port);

/// OpenAI-style finish reason (`stop`, `length`, `tool_calls`), or null while running.
nlohmann::json openai_finish(finish_reason f);

/// The usage object of the OpenAI chat and completions APIs.
nlohmann::json openai_usage(const gen_state& st);

} // namespace troupe::sim
