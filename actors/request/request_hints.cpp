#include "actors/request/request_hints.hpp"

#include "protocol/prompt.hpp"

#include <array>

namespace troupe::actors {

namespace {

/// In order of precedence: smg's header first, then the ones docs/api.md names.
constexpr std::array<std::string_view, 4> key_headers{"x-smg-routing-key", "x-routing-key",
                                                      "x-session-id", "x-user-id"};

} // namespace

std::string routing_key(const transport::request& req) {
  for (auto name : key_headers) {
    if (auto it = req.find(name); it != req.end() && !it->value().empty()) {
      return std::string(it->value());
    }
  }
  return {};
}

std::string target_worker(const transport::request& req) {
  if (auto it = req.find("x-smg-target-worker"); it != req.end()) {
    return std::string(it->value());
  }
  return {};
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
