#include "protocol/routes.hpp"

#include <array>

namespace troupe::protocol {

namespace {

using op = operation;
constexpr auto oa = api_format::openai;

// One row per enum value, in enum order (checked by tests/protocol/routes_test.cpp).
constexpr std::array<operation_info, 14> operation_table{{
    {op::generate, "generate", oa, true, true},
    {op::chat_completions, "chat_completions", oa, true, true},
    {op::completions, "completions", oa, true, true},
    {op::embeddings, "embeddings", oa, true, false},
    {op::rerank, "rerank", oa, true, true},
    {op::messages, "messages", api_format::anthropic, true, true},
    {op::responses_create, "responses", oa, true, true},
    {op::responses_get, "responses_get", oa, false, false},
    {op::responses_delete, "responses_delete", oa, false, false},
    {op::responses_cancel, "responses_cancel", oa, false, false},
    {op::responses_input_items, "responses_input_items", oa, false, false},
    {op::get_model_info, "get_model_info", oa, false, false},
    {op::get_server_info, "get_server_info", oa, false, false},
    {op::health_generate, "health_generate", oa, false, false},
}};

} // namespace

const operation_info& info(operation o) noexcept {
  return operation_table[static_cast<std::size_t>(o)];
}

provider_kind api_provider(operation o) noexcept {
  switch (o) {
  case op::messages:
    return provider_kind::anthropic;
  case op::generate:
  case op::get_model_info:
  case op::get_server_info:
  case op::health_generate:
    return provider_kind::none;
  default:
    return provider_kind::openai;
  }
}

} // namespace troupe::protocol
