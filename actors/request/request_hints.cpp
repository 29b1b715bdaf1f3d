#include "actors/request/request_hints.hpp"

#include "protocol/prompt.hpp"
#include "transport/header_fields.hpp"

#include <array>
#include <optional>

namespace troupe::actors {

namespace {

/// The headers the hints come from: the routing key's in order of precedence (smg's first,
/// then the ones docs/api.md names), then smg's target worker, last.
constexpr std::array<std::string_view, 5> hint_headers{
    "x-smg-routing-key", "x-routing-key", "x-session-id", "x-user-id", "x-smg-target-worker"};

} // namespace

affinity_hints affinity_hints_of(const transport::request& req) {
  // One pass over the fields for the five names (a `find` per name is a case-insensitive tree
  // search, ~80-100 instructions each, for headers a request rarely has); none of them is a
  // name Beast knows, so the fields it knows (most of a request's) cost an integer compare.
  static const transport::field_names names{hint_headers};
  std::array<std::optional<std::string_view>, hint_headers.size()> first;
  transport::first_fields(req, names, first);
  affinity_hints out;
  for (std::size_t i = 0; i + 1 < first.size(); ++i) {
    if (first[i] && !first[i]->empty()) {
      out.routing_key = std::string(*first[i]);
      break;
    }
  }
  if (first.back()) {
    out.target = std::string(*first.back());
  }
  return out;
}

bool matches_prompts(const std::string& policy_name) {
  // The policies that read the prompt: its prefix (cache_aware, prefix_hash), its length
  // (bucket).
  return policy_name == "cache_aware" || policy_name == "prefix_hash" || policy_name == "bucket";
}

prompt_ref request_prompt(std::shared_ptr<const void> owner, std::string_view body,
                          protocol::operation op, const protocol::request_facts& facts) {
  auto spans = protocol::find_prompt(op, facts, body);
  if (spans.empty()) {
    return {};
  }
  return {std::move(owner), spans.parts};
}

} // namespace troupe::actors
