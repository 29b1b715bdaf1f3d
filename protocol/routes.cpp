#include "protocol/routes.hpp"

#include <array>

namespace troupe::protocol {

namespace {

using op = operation;
constexpr auto oa = api_format::openai;
constexpr auto string_k = kind_bit(json_kind::string);
constexpr auto array_k = kind_bit(json_kind::array);
constexpr auto integer_k = kind_bit(json_kind::integer);

// -- routes --

constexpr std::array<std::string_view, 1> generate_paths{"/generate"};
constexpr std::array<std::string_view, 1> chat_paths{"/v1/chat/completions"};
constexpr std::array<std::string_view, 1> completions_paths{"/v1/completions"};
constexpr std::array<std::string_view, 1> embeddings_paths{"/v1/embeddings"};
constexpr std::array<std::string_view, 2> rerank_paths{"/v1/rerank", "/rerank"};
constexpr std::array<std::string_view, 1> messages_paths{"/v1/messages"};
constexpr std::array<std::string_view, 1> responses_paths{"/v1/responses"};
constexpr std::array<std::string_view, 1> response_paths{"/v1/responses/{id}"};
constexpr std::array<std::string_view, 1> response_cancel_paths{"/v1/responses/{id}/cancel"};
constexpr std::array<std::string_view, 1> response_items_paths{"/v1/responses/{id}/input_items"};
constexpr std::array<std::string_view, 1> model_info_paths{"/get_model_info"};
constexpr std::array<std::string_view, 1> server_info_paths{"/get_server_info"};
constexpr std::array<std::string_view, 1> health_generate_paths{"/health_generate"};

// -- bodies: rules, then the fields the scan watches (the rules' first, same order) --

// Anthropic Messages: https://docs.anthropic.com/en/api/messages (model, max_tokens, messages
// are required; max_tokens >= 1).
constexpr std::array<field_rule, 3> messages_rules{{
    {"model", true, string_k, true, 0},
    {"max_tokens", true, integer_k, false, 1},
    {"messages", true, array_k, true, 0},
}};
constexpr std::array<std::string_view, 4> messages_watched{"model", "max_tokens", "messages",
                                                           "system"};
constexpr std::array<std::string_view, 2> messages_prompt{"system", "messages"};

constexpr std::array<field_rule, 1> chat_rules{{{"messages", true, array_k, true, 0}}};
constexpr std::array<std::string_view, 1> chat_watched{"messages"};
constexpr std::array<std::string_view, 1> chat_prompt{"messages"};

constexpr std::array<field_rule, 1> completions_rules{
    {{"prompt", true, string_k | array_k, false, 0}}};
constexpr std::array<std::string_view, 1> completions_watched{"prompt"};
constexpr std::array<std::string_view, 1> completions_prompt{"prompt"};

constexpr std::array<field_rule, 1> embeddings_rules{
    {{"input", true, string_k | array_k, false, 0}}};
constexpr std::array<std::string_view, 1> embeddings_watched{"input"};

// Responses: `input` is optional (a turn may continue `previous_response_id`), but typed.
constexpr std::array<field_rule, 2> responses_rules{{
    {"input", false, string_k | array_k, false, 0},
    {"previous_response_id", false, string_k, true, 0},
}};
constexpr std::array<std::string_view, 3> responses_watched{"input", "previous_response_id",
                                                            "instructions"};
constexpr std::array<std::string_view, 2> responses_prompt{"instructions", "input"};

// SGLang `/generate` has no rules; its prompt fields are watched for the cache-aware policy.
constexpr std::array<std::string_view, 2> generate_watched{"text", "input_ids"};
constexpr std::array<std::string_view, 2> generate_prompt{"text", "input_ids"};

constexpr operation_info body_op(op o, std::string_view name,
                                 std::span<const std::string_view> paths, api_format format,
                                 provider_kind provider, pd_service pd) {
  return {o,
          name,
          "POST",
          paths,
          format,
          provider,
          true,
          true,
          pd,
          {},
          {},
          {},
          batch_rule::none,
          {},
          response_ref::none,
          false};
}

constexpr operation_info bodiless_op(op o, std::string_view name, std::string_view method,
                                     std::span<const std::string_view> paths,
                                     provider_kind provider, pd_service pd,
                                     response_ref names = response_ref::none) {
  return {o,  name, method,           paths, oa,    provider, false, false, pd, {},
          {}, {},   batch_rule::none, {},    names, false};
}

constexpr std::array<operation_info, 14> make_table() {
  auto generate =
      body_op(op::generate, "generate", generate_paths, oa, provider_kind::none, pd_service::pair);
  generate.watched = generate_watched;
  generate.prompt = generate_prompt;
  generate.batch = batch_rule::text_or_ids;
  generate.input_logprobs = "return_logprob";

  auto chat = body_op(op::chat_completions, "chat_completions", chat_paths, oa,
                      provider_kind::openai, pd_service::pair);
  chat.rules = chat_rules;
  chat.watched = chat_watched;
  chat.prompt = chat_prompt;
  chat.batch = batch_rule::choices;

  auto completions = body_op(op::completions, "completions", completions_paths, oa,
                             provider_kind::openai, pd_service::pair);
  completions.rules = completions_rules;
  completions.watched = completions_watched;
  completions.prompt = completions_prompt;
  completions.batch = batch_rule::prompt_list;

  auto embeddings = body_op(op::embeddings, "embeddings", embeddings_paths, oa,
                            provider_kind::openai, pd_service::none);
  embeddings.rules = embeddings_rules;
  embeddings.watched = embeddings_watched;

  auto rerank =
      body_op(op::rerank, "rerank", rerank_paths, oa, provider_kind::openai, pd_service::pair);

  auto messages = body_op(op::messages, "messages", messages_paths, api_format::anthropic,
                          provider_kind::anthropic, pd_service::pair);
  messages.rules = messages_rules;
  messages.watched = messages_watched;
  messages.prompt = messages_prompt;

  auto responses = body_op(op::responses_create, "responses", responses_paths, oa,
                           provider_kind::openai, pd_service::pair);
  responses.rules = responses_rules;
  responses.watched = responses_watched;
  responses.prompt = responses_prompt;
  responses.names_response = response_ref::previous;
  responses.creates_response = true;

  // A stored response is read where it was written: by the decode worker of a pair. A cancel
  // frees capacity, so it never waits for admission behind the work it stops.
  auto stored = [](op o, std::string_view name, std::string_view method,
                   std::span<const std::string_view> paths) {
    return bodiless_op(o, name, method, paths, provider_kind::openai, pd_service::decode,
                       response_ref::path);
  };
  return {{
      generate,
      chat,
      completions,
      embeddings,
      rerank,
      messages,
      responses,
      stored(op::responses_get, "responses_get", "GET", response_paths),
      stored(op::responses_delete, "responses_delete", "DELETE", response_paths),
      stored(op::responses_cancel, "responses_cancel", "POST", response_cancel_paths),
      stored(op::responses_input_items, "responses_input_items", "GET", response_items_paths),
      // Info from any worker: with only pairs, from a prefill worker.
      bodiless_op(op::get_model_info, "get_model_info", "GET", model_info_paths,
                  provider_kind::none, pd_service::prefill),
      bodiless_op(op::get_server_info, "get_server_info", "GET", server_info_paths,
                  provider_kind::none, pd_service::prefill),
      // With only pairs, `/health_generate` checks a pair.
      bodiless_op(op::health_generate, "health_generate", "GET", health_generate_paths,
                  provider_kind::none, pd_service::pair),
  }};
}

constexpr auto operation_table = make_table();

/// True when row i describes operation i, and the watched fields start with the rules' own.
constexpr bool table_consistent() {
  for (std::size_t i = 0; i < operation_table.size(); ++i) {
    auto& row = operation_table[i];
    if (static_cast<std::size_t>(row.op) != i || row.rules.size() > row.watched.size()) {
      return false;
    }
    for (std::size_t r = 0; r < row.rules.size(); ++r) {
      if (row.rules[r].name != row.watched[r]) {
        return false;
      }
    }
  }
  return true;
}

static_assert(table_consistent(), "one row per operation, in enum order; rules' fields watched");

} // namespace

const operation_info& info(operation o) noexcept {
  return operation_table[static_cast<std::size_t>(o)];
}

std::span<const operation_info> operations() noexcept {
  return operation_table;
}

} // namespace troupe::protocol
