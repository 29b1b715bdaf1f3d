#pragma once

#include "actors/fleet.hpp"
#include "protocol/error.hpp"
#include "protocol/routes.hpp"

#include <optional>
#include <string>

namespace troupe::actors {

/// Why a model that only prefill and decode workers serve (`service`: known, no regular worker)
/// cannot serve `op`, if it cannot: the operation needs a regular worker (501
/// `not_implemented`), or a role it needs has no worker (503 `no_worker_available`, naming the
/// missing half). `model` is empty for a request that names none ("the fleet").
std::optional<protocol::api_error> pd_only_refusal(const protocol::operation_info& op,
                                                   const std::string& model,
                                                   const model_service& service);

} // namespace troupe::actors
