#include "protocol/validation.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace troupe::protocol {

namespace {

/// A set of JSON kinds, as bits.
using kinds = std::uint16_t;

constexpr kinds bit(json_kind k) {
  return static_cast<kinds>(1u << static_cast<unsigned>(k));
}

constexpr kinds string_k = bit(json_kind::string);
constexpr kinds array_k = bit(json_kind::array);
constexpr kinds integer_k = bit(json_kind::integer);

/// One requirement on a top-level field.
struct field_rule {
  std::string_view name;
  bool required;    ///< Absent (or null) is an error.
  kinds allowed;    ///< Kinds accepted when present.
  bool non_empty;   ///< An empty string or array is an error.
  std::int64_t min; ///< Integers: smallest value accepted.
};

/// The rules of one operation, and the field names the scan must watch for them (the rules'
/// fields first, in order; then the prompt fields protocol/prompt.cpp reads, if others).
struct operation_rules {
  operation op;
  std::span<const field_rule> rules;
  std::span<const std::string_view> names;
};

// -- rule sets (names in the same order as rules) --

// Anthropic Messages: https://docs.anthropic.com/en/api/messages (model, max_tokens, messages
// are required; max_tokens >= 1).
constexpr std::array<field_rule, 3> messages_rules{{
    {"model", true, string_k, true, 0},
    {"max_tokens", true, integer_k, false, 1},
    {"messages", true, array_k, true, 0},
}};
constexpr std::array<std::string_view, 4> messages_names{"model", "max_tokens", "messages",
                                                         "system"};

constexpr std::array<field_rule, 1> chat_rules{{{"messages", true, array_k, true, 0}}};
constexpr std::array<std::string_view, 1> chat_names{"messages"};

constexpr std::array<field_rule, 1> completions_rules{
    {{"prompt", true, string_k | array_k, false, 0}}};
constexpr std::array<std::string_view, 1> completions_names{"prompt"};

constexpr std::array<field_rule, 1> embeddings_rules{
    {{"input", true, string_k | array_k, false, 0}}};
constexpr std::array<std::string_view, 1> embeddings_names{"input"};

// Responses: `input` is optional (a turn may continue `previous_response_id`), but typed.
constexpr std::array<field_rule, 2> responses_rules{{
    {"input", false, string_k | array_k, false, 0},
    {"previous_response_id", false, string_k, true, 0},
}};
constexpr std::array<std::string_view, 3> responses_names{"input", "previous_response_id",
                                                          "instructions"};

// SGLang `/generate` has no rules; its prompt fields are watched for the cache-aware policy.
constexpr std::array<std::string_view, 2> generate_names{"text", "input_ids"};

// One row per operation with rules; the others pass.
constexpr std::array<operation_rules, 6> rule_table{{
    {operation::messages, messages_rules, messages_names},
    {operation::chat_completions, chat_rules, chat_names},
    {operation::completions, completions_rules, completions_names},
    {operation::embeddings, embeddings_rules, embeddings_names},
    {operation::responses_create, responses_rules, responses_names},
    {operation::generate, {}, generate_names},
}};

const operation_rules* rules_of(operation op) noexcept {
  for (auto& r : rule_table) {
    if (r.op == op) {
      return &r;
    }
  }
  return nullptr;
}

std::string allowed_names(kinds allowed) {
  std::string out;
  for (auto k : {json_kind::boolean, json_kind::integer, json_kind::number, json_kind::string,
                 json_kind::array, json_kind::object}) {
    if (allowed & bit(k)) {
      if (!out.empty()) {
        out += " or ";
      }
      out += describe(k);
    }
  }
  return out;
}

/// The error for a broken rule, worded in the API's style: Anthropic's validation messages
/// read `field: problem`; OpenAI's name the field and put it in `param`.
api_error broken(api_format format, std::string_view field, std::string problem) {
  auto message = format == api_format::anthropic ? std::string(field) + ": " + problem
                                                 : "'" + std::string(field) + "': " + problem;
  return {error_code::bad_request, std::move(message), std::string(field)};
}

} // namespace

std::span<const std::string_view> watched_fields(operation op) noexcept {
  auto* r = rules_of(op);
  return r ? r->names : std::span<const std::string_view>{};
}

std::optional<api_error> validate(operation op, const request_facts& facts) {
  auto* r = rules_of(op);
  if (!r) {
    return std::nullopt;
  }
  auto format = info(op).format;
  for (std::size_t i = 0; i < r->rules.size(); ++i) {
    auto& rule = r->rules[i];
    auto fact = i < facts.fields.size() ? facts.fields[i] : field_fact{};
    if (fact.kind == json_kind::absent || fact.kind == json_kind::null) {
      if (rule.required) {
        return broken(format, rule.name, "Field required");
      }
      continue;
    }
    if (!(rule.allowed & bit(fact.kind))) {
      return broken(format, rule.name,
                    "Input should be " + allowed_names(rule.allowed) + ", got " +
                        std::string(describe(fact.kind)));
    }
    if (rule.non_empty && fact.empty) {
      return broken(format, rule.name,
                    fact.kind == json_kind::array ? "Input should have at least 1 item"
                                                  : "Input should not be empty");
    }
    if (fact.kind == json_kind::integer && fact.integer < rule.min) {
      return broken(format, rule.name,
                    "Input should be greater than or equal to " + std::to_string(rule.min));
    }
  }
  return std::nullopt;
}

scan_result scan_and_validate(operation op, std::string_view body) {
  auto scan = scan_request(body, watched_fields(op));
  if (!scan.error) {
    scan.error = validate(op, scan.facts);
  }
  return scan;
}

} // namespace troupe::protocol
