#pragma once

#include "protocol/error.hpp"
#include "protocol/worker.hpp"

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

/// Static facts about one operation: how the gateway treats it.
struct operation_info {
  operation op;
  std::string_view name; ///< Metric label and log name, e.g. `chat_completions`.
  api_format format;     ///< The error format of the route.
  bool has_body;         ///< A JSON body is required and scanned.
  bool pd_capable;       ///< Served by a prefill/decode pair when the model has one.
};

/// The facts about `op`.
const operation_info& info(operation op) noexcept;

/// The provider whose API `op` belongs to: `anthropic` for `/v1/messages`, `openai` for the
/// OpenAI routes, `none` (self-hosted) for SGLang's native ones. Credentials a client sends
/// with the request are meant for it (see `selection::provider`).
provider_kind api_provider(operation op) noexcept;

} // namespace troupe::protocol
