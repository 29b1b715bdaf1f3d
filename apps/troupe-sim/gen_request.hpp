#pragma once

#include "apps/troupe-sim/sim_config.hpp"
#include "apps/troupe-sim/tokenizer.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sim {

/// The PD bootstrap fields of one batch element (`bootstrap_host/port/room`).
struct bootstrap_info {
  std::optional<std::string> host;   ///< Host of the prefill's bootstrap server.
  std::optional<std::uint16_t> port; ///< Its port; absent or null: no bootstrap server.
  std::optional<std::string> room;   ///< The room, as its JSON text (`12345`).
};

/// vLLM's `kv_transfer_params` of a request: what the gateway tells the KV connector.
struct kv_params {
  bool do_remote_decode = false;  ///< Prefill leg: pin the prompt's blocks for a decode worker.
  bool do_remote_prefill = false; ///< Decode leg: fetch the prompt's blocks from a prefill.
  std::optional<std::string> remote_engine_id;                ///< The prefill engine's id.
  std::optional<std::vector<std::uint64_t>> remote_block_ids; ///< NIXL: the blocks to fetch.
  std::optional<std::string> remote_host;    ///< NIXL: the prefill's side-channel host.
  std::optional<std::uint16_t> remote_port;  ///< NIXL: its side-channel port.
  std::optional<std::string> transfer_id;    ///< Mooncake: the id the gateway minted.
  std::optional<std::string> bootstrap_addr; ///< Mooncake: `http://host:port` of the prefill.
};

/// A tool call the simulated model decided to make.
struct tool_call {
  std::string id;        ///< `call_...` or `toolu_...`.
  std::string name;      ///< The function called.
  std::string arguments; ///< JSON text of the arguments.
};

/// What an API request asks of the engine, whatever its API.
struct gen_request {
  std::vector<std::vector<token_id>> prompts; ///< One per batch element.
  std::size_t n = 1;                          ///< Sequences per prompt.
  std::optional<std::size_t> max_tokens;      ///< Output limit per sequence.
  bool ignore_eos = false;                    ///< Write exactly `max_tokens` tokens.
  bool stream = false;                        ///< Answer as server-sent events.
  bool batch = false;                         ///< The request used the list form.
  bool logprobs = false;                      ///< Report token log-probabilities.
  std::optional<tool_call> tool;              ///< Answer with this tool call instead of text.
  std::vector<bootstrap_info> bootstrap;      ///< One per prompt; empty when none was sent.
  std::optional<kv_params> kv;                ///< vLLM: `kv_transfer_params`, when sent.
  std::string model;                          ///< Model to report.
  nlohmann::json extra;                       ///< API-specific data kept from parse to render.
};

/// Why a sequence stopped.
enum class finish_reason {
  none,   ///< Still writing.
  stop,   ///< The model chose to stop (an end-of-sequence token).
  length, ///< The request's max tokens were reached.
  tool,   ///< A tool call was written.
};

/// One output sequence (a prompt × one of its `n` choices).
struct sequence {
  std::size_t prompt = 0;        ///< Index of its prompt.
  std::size_t choice = 0;        ///< Index among its prompt's `n` sequences.
  std::size_t target = 0;        ///< Tokens it will write.
  std::uint64_t seed = 0;        ///< Seeds its words.
  std::vector<token_id> ids;     ///< Tokens written so far.
  std::string text;              ///< Text written so far.
  std::vector<std::size_t> ends; ///< Where each token ends in `text`.
  std::size_t last_piece = 0;    ///< Where the latest token starts in `text`.
  finish_reason finish = finish_reason::none;

  /// The text of the latest token.
  std::string_view piece() const noexcept { return std::string_view(text).substr(last_piece); }

  /// The text of token `i`.
  std::string_view piece_at(std::size_t i) const noexcept {
    const std::size_t from = i == 0 ? 0 : ends[i - 1];
    return std::string_view(text).substr(from, ends[i] - from);
  }

  /// Index in the flat list of sequences of a request with `n` sequences per prompt.
  std::size_t index(std::size_t n) const noexcept { return prompt * n + choice; }
};

/// Prompt accounting of one batch element.
struct prompt_usage {
  std::size_t tokens = 0; ///< Prompt tokens.
  std::size_t cached = 0; ///< Of which served from the prefix cache.
};

/// A request being served: the request, its prompts' accounting and its sequences.
struct gen_state {
  gen_request req;
  std::vector<prompt_usage> prompts;
  std::vector<sequence> seqs;
  std::string id;           ///< Response id (`chatcmpl-...`, `msg_...`, ...).
  std::int64_t created = 0; ///< Unix seconds.
  worker_role role = worker_role::regular;
  std::chrono::steady_clock::time_point started;
  bool cancelled = false; ///< Stopped by a cancel request before it finished.
  bool abandoned = false; ///< The client left (or the connection was dropped) before the end.
  bool failed = false;    ///< Ended with an error (a failed PD rendezvous).
  std::size_t kv_fetched_tokens = 0; ///< vLLM decode: prompt tokens whose KV was fetched.
  nlohmann::json kv_out;             ///< vLLM prefill: the `kv_transfer_params` to return.

  /// Prompt tokens of all prompts.
  std::size_t prompt_tokens() const noexcept;
  /// Cached prompt tokens of all prompts.
  std::size_t cached_tokens() const noexcept;
  /// Tokens written by all sequences.
  std::size_t completion_tokens() const noexcept;
  /// Seconds since the request started.
  double elapsed_seconds() const noexcept;
};

} // namespace troupe::sim
