#pragma once

// What a request asks a policy for: the request side of a selection, shared by the policy
// actor (actors/policy.hpp) and its strategies (actors/policies/).

#include "protocol/worker.hpp"

#include <array>
#include <caf/allowed_unsafe_message_type.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// The prompt of a request for the cache-aware policy: the raw JSON of its prompt-bearing
/// fields (`protocol::find_prompt`), viewed in place, and what keeps those bytes alive while
/// a policy reads them. No copy: a request's body is not touched while it waits for a worker.
struct prompt_ref {
  std::shared_ptr<const void> owner;
  std::array<std::string_view, 2> parts; ///< System text first; unused parts are empty.
};

/// What a request asks a policy for.
struct selection {
  std::string model; ///< Empty: any model.
  protocol::worker_type role = protocol::worker_type::regular;
  std::vector<std::string> exclude; ///< Workers that failed this request already.
  std::string routing_key;          ///< Session affinity key, when given (`routing_key`).
  prompt_ref prompt;                ///< The prompt, for cache-aware selection; may be empty.
  /// The provider whose API the request speaks (`protocol::api_provider`). Credentials never
  /// cross providers: when the workers serving the model belong to more than one provider
  /// (a worker without one is a provider of its own), only those of this provider are
  /// eligible, or the self-hosted ones when this provider has none of them.
  protocol::provider_kind provider = protocol::provider_kind::none;
  std::string prefer; ///< A worker to pick when it is eligible (it stores the request's state).
  /// smg's `X-SMG-Target-Worker`: the worker that must take the request, named by its id, its
  /// URL or its index among the role's workers serving the model (registration order). A
  /// worker of another role is not this policy's to honour (the other half of a PD pair).
  std::string target;
};

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::selection)
