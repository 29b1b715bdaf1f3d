#pragma once

// What a request tells the policies beyond its model: its session-affinity key and its prompt
// (for the request actor and its paths).

#include "actors/policies/selection.hpp"
#include "protocol/request_scan.hpp"
#include "protocol/routes.hpp"
#include "transport/http_types.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace troupe::actors {

/// What a request's headers ask of the policies.
struct affinity_hints {
  /// The first non-empty of `x-smg-routing-key` (smg's header), `x-routing-key`,
  /// `x-session-id`, `x-user-id`; empty when none is given.
  std::string routing_key;
  /// smg's `X-SMG-Target-Worker`: the worker the request must go to (an id, a URL or an
  /// index), empty when not given (docs/policies.md, "The target-worker header").
  std::string target;
};

/// Both hints of `req`, read in one pass over its fields.
affinity_hints affinity_hints_of(const transport::request& req);

/// True when the policy named `name` reads prompts (`cache_aware`, `prefix_hash`, `bucket`):
/// only then is a request's prompt worth keeping for it.
bool matches_prompts(const std::string& policy_name);

/// The prompt of a body of operation `op`, scanned into `facts`, as views into `body`, which
/// `owner` keeps alive.
prompt_ref request_prompt(std::shared_ptr<const void> owner, std::string_view body,
                          protocol::operation op, const protocol::request_facts& facts);

} // namespace troupe::actors
