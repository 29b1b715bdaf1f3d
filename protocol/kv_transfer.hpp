#pragma once

// vLLM's prefill/decode disaggregation (docs/pd.md, "vLLM: in sequence"): what the gateway
// sends the prefill worker, what it reads from its answer, and what it adds to the request the
// decode worker gets. Pure value code, as smg's `kv_transfer.rs` and vLLM's example proxy.

#include "protocol/routes.hpp"
#include "protocol/worker.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::protocol {

/// The connector a pair uses: `unset` is NIXL.
inline kv_connector effective(kv_connector c) noexcept {
  return c == kv_connector::unset ? kv_connector::nixl : c;
}

/// True when a vLLM pair serves `op` in sequence (chat, completions, Messages, Responses).
bool vllm_serves_in_sequence(operation op) noexcept;

/// The request's `n` (1 when absent): a KV handoff has one consumer, so smg (and Troupe) skip
/// the prefill of a request that fans out.
std::uint64_t sampling_n(const nlohmann::ordered_json& body) noexcept;

/// Makes `body` (a copy of the client's) the prefill leg's: one token (the route's cap field:
/// `max_completion_tokens` replacing `max_tokens` on chat when the client used it, as an
/// engine refuses both; `max_output_tokens` on Responses; else `max_tokens`), unstreamed,
/// without `stream_options`, `min_tokens` or `min_completion_tokens`, `n` 1; tagged with
/// `params` as `kv_transfer_params` when not null.
void make_prefill_leg(nlohmann::ordered_json& body, operation op,
                      const nlohmann::ordered_json& params);

/// The prefill leg's tag: NIXL `{"do_remote_decode":true,"do_remote_prefill":false}`,
/// Mooncake the same with `transfer_id`; null for passthrough (nothing is tagged).
nlohmann::ordered_json prefill_params(kv_connector c, std::string_view transfer_id);

/// The `kv_transfer_params` object of a prefill worker's JSON answer, when it has one.
std::optional<nlohmann::ordered_json> harvest_params(std::string_view prefill_answer);

/// Mooncake's decode params: `{"do_remote_decode":false,"do_remote_prefill":true,
/// "transfer_id","remote_engine_id","remote_bootstrap_addr":"http://host:port"}`.
nlohmann::ordered_json mooncake_decode_params(std::string_view transfer_id,
                                              std::string_view engine_id, std::string_view host,
                                              std::uint16_t port);

/// A fresh transfer id, `xfer-` and 32 hex digits from `a` and `b`.
std::string transfer_id(std::uint64_t a, std::uint64_t b);

/// Mooncake's default bootstrap port (smg's `DEFAULT_BOOTSTRAP_PORT`).
inline constexpr std::uint16_t default_bootstrap_port = 8998;

} // namespace troupe::protocol
