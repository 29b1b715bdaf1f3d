#include "actors/request/upstream_headers.hpp"

#include "transport/header_fields.hpp"

#include <array>
#include <cctype>
#include <optional>

namespace troupe::actors {

namespace {

// Client headers a self-hosted worker or an OpenAI provider may see.
constexpr std::array<std::string_view, 8> forwarded{
    "authorization", "traceparent",  "tracestate", "x-smg-routing-key",
    "x-routing-key", "x-session-id", "x-user-id",  "content-type"};

/// The API version Anthropic requires on every request; sent when the client gave none.
constexpr std::string_view default_anthropic_version = "2023-06-01";

std::string_view header(const transport::request& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view{} : std::string_view{it->value()};
}

/// The key of an `Authorization: Bearer KEY` value, or empty.
std::string_view bearer_key(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() <= scheme.size()) {
    return {};
  }
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) {
      return {};
    }
  }
  auto key = authorization.substr(scheme.size());
  while (!key.empty() && key.front() == ' ') {
    key.remove_prefix(1);
  }
  return key;
}

/// True when a client credential is the gateway's own key (never passed to a provider).
bool is_gateway_key(std::string_view credential, std::string_view gateway_key) {
  return !gateway_key.empty() && credential == gateway_key;
}

void anthropic_headers(const transport::request& req, const worker_entry& worker,
                       std::string_view gateway_key, transport::header_block& out) {
  if (!worker.spec.api_key.empty()) {
    out.add("x-api-key", worker.spec.api_key);
  } else if (auto key = header(req, "x-api-key");
             !key.empty() && !is_gateway_key(key, gateway_key)) {
    out.add("x-api-key", key);
  } else if (auto auth = header(req, "authorization"); !auth.empty()) {
    if (auto bearer = bearer_key(auth); !bearer.empty()) {
      if (!is_gateway_key(bearer, gateway_key)) {
        out.add("x-api-key", bearer);
      }
    } else {
      out.add("authorization", auth);
    }
  }
  auto version = header(req, "anthropic-version");
  out.add("anthropic-version", version.empty() ? default_anthropic_version : version);
  // Betas may come in several headers; the API takes them comma-separated in one.
  std::string betas;
  for (const auto& f : req) {
    if (f.name() != transport::http::field::unknown ||
        !transport::beast::iequals(f.name_string(), "anthropic-beta")) {
      continue;
    }
    if (!betas.empty()) {
      betas += ",";
    }
    betas.append(f.value());
  }
  if (!betas.empty()) {
    out.add("anthropic-beta", betas);
  }
}

void allowlisted_headers(const transport::request& req, const worker_entry& worker,
                         std::string_view gateway_key, transport::header_block& out) {
  bool own_key = !worker.spec.api_key.empty();
  bool provider = worker.spec.provider != protocol::provider_kind::none;
  // The first field of each allowed name, in one pass; sent in the list's order.
  static const transport::field_names names{forwarded};
  std::array<std::optional<std::string_view>, forwarded.size()> values;
  transport::first_fields(req, names, values);
  for (std::size_t i = 0; i < forwarded.size(); ++i) {
    auto name = forwarded[i];
    auto value = values[i].value_or(std::string_view{});
    if (value.empty()) {
      continue;
    }
    if (name == "authorization" &&
        (own_key || (provider && is_gateway_key(bearer_key(value), gateway_key)))) {
      continue;
    }
    out.add(name, value);
  }
  if (own_key) {
    out.add("authorization", "Bearer ", worker.spec.api_key);
  }
}

} // namespace

transport::header_block upstream_headers(const transport::request& req, const worker_entry& worker,
                                         const std::string& request_id,
                                         std::string_view gateway_key) {
  transport::header_block out;
  out.reserve(256); // the usual fields, a key and the request id: one allocation
  if (worker.spec.provider == protocol::provider_kind::anthropic) {
    anthropic_headers(req, worker, gateway_key, out);
  } else {
    allowlisted_headers(req, worker, gateway_key, out);
  }
  out.add("x-request-id", request_id);
  return out;
}

} // namespace troupe::actors
