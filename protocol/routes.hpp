#pragma once

// The data-plane operations and everything the gateway knows about each of them, in one table
// (routes.cpp): its routes, its API's format and provider, what its body must hold, where its
// prompt is, how a prefill/decode pair serves it, and what it does with stored Responses
// objects. Adding an operation is one enum value and one row (plus its tests).

#include "protocol/error.hpp"
#include "protocol/request_scan.hpp"
#include "protocol/worker.hpp"

#include <cstdint>
#include <span>
#include <string_view>

namespace troupe::protocol {

/// The data-plane operations the gateway proxies to workers.
enum class operation {
  generate,              ///< SGLang `POST /generate`.
  chat_completions,      ///< OpenAI `POST /v1/chat/completions`.
  completions,           ///< OpenAI `POST /v1/completions`.
  embeddings,            ///< OpenAI `POST /v1/embeddings`.
  rerank,                ///< `POST /v1/rerank` and `POST /rerank`.
  messages,              ///< Anthropic `POST /v1/messages`.
  responses_create,      ///< OpenAI `POST /v1/responses`.
  responses_get,         ///< `GET /v1/responses/{id}`.
  responses_delete,      ///< `DELETE /v1/responses/{id}`.
  responses_cancel,      ///< `POST /v1/responses/{id}/cancel`.
  responses_input_items, ///< `GET /v1/responses/{id}/input_items`.
  get_model_info,        ///< `GET /get_model_info`, answered by any worker.
  get_server_info,       ///< `GET /get_server_info`, answered by any worker.
  health_generate,       ///< `GET /health_generate`, answered by any worker.
};

/// A set of JSON kinds, as bits (`kind_bit`).
using json_kinds = std::uint16_t;

/// The bit of `k` in a `json_kinds` set.
constexpr json_kinds kind_bit(json_kind k) noexcept {
  return static_cast<json_kinds>(1u << static_cast<unsigned>(k));
}

/// One requirement on a top-level field of a request body (checked by `validate`).
struct field_rule {
  std::string_view name;
  bool required;      ///< Absent (or null) is an error.
  json_kinds allowed; ///< Kinds accepted when present.
  bool non_empty;     ///< An empty string or array is an error.
  std::int64_t min;   ///< Integers: smallest value accepted.
};

/// How a model that only prefill/decode pairs serve (no regular worker) serves an operation.
enum class pd_service : std::uint8_t {
  pair,    ///< By a pair: dual dispatch with bootstrap fields (docs/pd.md).
  prefill, ///< By one prefill worker (model and server info).
  decode,  ///< By one decode worker: the one storing the Responses object named.
  none,    ///< Not at all: it needs a regular worker.
};

/// How many sequences of a prefill/decode request each need a bootstrap room
/// (`bootstrap_batch_size`).
enum class batch_rule : std::uint8_t {
  none,        ///< Always one: the bootstrap fields are scalars.
  text_or_ids, ///< SGLang: a `text` list, or `input_ids` as a list of token lists.
  choices,     ///< `n` > 1 choices.
  prompt_list, ///< `prompt` as a list of strings or of token lists (a flat token list is one).
};

/// Where a request names a stored Responses object, which lives on the worker that made it.
enum class response_ref : std::uint8_t {
  none,     ///< It names none.
  path,     ///< The route's `{id}`.
  previous, ///< The body's `previous_response_id`.
};

/// Static facts about one operation: how the gateway treats it.
struct operation_info {
  operation op;
  std::string_view name;                   ///< Metric label and log name, e.g. `chat_completions`.
  std::string_view method;                 ///< HTTP method of its routes (`POST`, ...).
  std::span<const std::string_view> paths; ///< Its route patterns (`{id}`: one segment).
  api_format format;                       ///< The error format of its routes.
  /// The provider whose API it belongs to; credentials a client sends are meant for it (see
  /// `selection::provider`). `none`: self-hosted (SGLang's native routes).
  provider_kind provider;
  bool has_body; ///< A JSON body is required and scanned.
  bool limited;  ///< Passes admission control (`--max-concurrent-requests`).
  pd_service pd; ///< How a model with only prefill/decode pairs serves it.
  /// What the body must hold, checked in order (the first broken rule answers 400).
  std::span<const field_rule> rules;
  /// The top-level fields the scan records: the rules' fields first, in the same order, then
  /// those of `prompt` not among them.
  std::span<const std::string_view> watched;
  /// The prompt-bearing fields, in prompt order (system text first), for cache-aware routing.
  std::span<const std::string_view> prompt;
  batch_rule batch; ///< Prefill/decode: the sequences that each get a bootstrap room.
  /// Prefill/decode: the body's flag asking for input logprobs, which only the prefill leg
  /// computes and the decode answer gets merged in; empty when the API has none.
  std::string_view input_logprobs;
  response_ref names_response; ///< Where it names a stored Responses object.
  bool creates_response;       ///< Its answer is a stored Responses object (its id is kept).
};

/// The facts about `op`.
const operation_info& info(operation op) noexcept;

/// Every operation's facts, in enum order.
std::span<const operation_info> operations() noexcept;

/// The provider whose API `op` belongs to (`info(op).provider`).
inline provider_kind api_provider(operation op) noexcept {
  return info(op).provider;
}

} // namespace troupe::protocol
