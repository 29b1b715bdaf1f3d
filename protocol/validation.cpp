#include "protocol/validation.hpp"

#include <string>

namespace troupe::protocol {

namespace {

std::string allowed_names(json_kinds allowed) {
  std::string out;
  for (auto k : {json_kind::boolean, json_kind::integer, json_kind::number, json_kind::string,
                 json_kind::array, json_kind::object}) {
    if (allowed & kind_bit(k)) {
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
  return info(op).watched;
}

std::optional<api_error> validate(operation op, const request_facts& facts) {
  const auto& row = info(op);
  for (std::size_t i = 0; i < row.rules.size(); ++i) {
    auto& rule = row.rules[i];
    auto fact = i < facts.fields.size() ? facts.fields[i] : field_fact{};
    if (fact.kind == json_kind::absent || fact.kind == json_kind::null) {
      if (rule.required) {
        return broken(row.format, rule.name, "Field required");
      }
      continue;
    }
    if (!(rule.allowed & kind_bit(fact.kind))) {
      return broken(row.format, rule.name,
                    "Input should be " + allowed_names(rule.allowed) + ", got " +
                        std::string(describe(fact.kind)));
    }
    if (rule.non_empty && fact.empty) {
      return broken(row.format, rule.name,
                    fact.kind == json_kind::array ? "Input should have at least 1 item"
                                                  : "Input should not be empty");
    }
    if (fact.kind == json_kind::integer && fact.integer < rule.min) {
      return broken(row.format, rule.name,
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
