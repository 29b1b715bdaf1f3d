#include "actors/pd_only_refusal.hpp"

namespace troupe::actors {

std::optional<protocol::api_error> pd_only_refusal(const protocol::operation_info& op,
                                                   const std::string& model,
                                                   const model_service& service) {
  auto what = model.empty() ? std::string{"the fleet"} : "the model '" + model + "'";
  auto route = std::string(op.method) + " " + std::string(op.paths.front());
  switch (op.pd) {
  case protocol::pd_service::none:
    return protocol::api_error{protocol::error_code::not_implemented,
                               what +
                                   " is served by prefill/decode workers only, which cannot "
                                   "serve " +
                                   route + " (it needs a regular worker)",
                               model.empty() ? "" : "model"};
  case protocol::pd_service::pair: {
    if (service.pd) {
      return std::nullopt;
    }
    auto has = service.prefill ? "prefill workers but no decode worker"
                               : "decode workers but no prefill worker";
    return protocol::api_error{protocol::error_code::no_worker_available,
                               what + " has " + has + ": " + route +
                                   " needs a prefill and a decode worker (or a regular one)",
                               ""};
  }
  case protocol::pd_service::prefill:
    if (service.prefill) {
      return std::nullopt;
    }
    return protocol::api_error{protocol::error_code::no_worker_available,
                               what + " has no prefill or regular worker to answer " + route, ""};
  case protocol::pd_service::decode:
    if (service.decode) {
      return std::nullopt;
    }
    return protocol::api_error{protocol::error_code::no_worker_available,
                               what + " has no decode or regular worker to answer " + route, ""};
  }
  return std::nullopt;
}

} // namespace troupe::actors
