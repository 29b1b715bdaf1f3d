#include "actors/upstream_headers.hpp"

#include <array>

namespace troupe::actors {

namespace {

// Client headers a self-hosted worker may see.
constexpr std::array<std::string_view, 7> forwarded{
    "authorization", "traceparent", "tracestate", "x-routing-key",
    "x-session-id",  "x-user-id",   "content-type"};

} // namespace

transport::header_list upstream_headers(const transport::request& req, const worker_entry& worker,
                                        const std::string& request_id) {
  transport::header_list out;
  bool own_key = !worker.spec.api_key.empty();
  for (auto name : forwarded) {
    if (own_key && name == "authorization") {
      continue;
    }
    if (auto it = req.find(name); it != req.end()) {
      out.emplace_back(std::string(name), std::string(it->value()));
    }
  }
  if (own_key) {
    if (worker.spec.provider == protocol::provider_kind::anthropic) {
      out.emplace_back("x-api-key", worker.spec.api_key);
    } else {
      out.emplace_back("authorization", "Bearer " + worker.spec.api_key);
    }
  }
  out.emplace_back("x-request-id", request_id);
  return out;
}

} // namespace troupe::actors
