#pragma once

#include "protocol/url.hpp"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::protocol {

/// The role of a worker in serving a model.
enum class worker_type {
  regular, ///< Serves whole requests.
  prefill, ///< Computes the prompt's KV cache (PD disaggregation).
  decode,  ///< Produces the tokens from a prefill worker's KV cache (PD disaggregation).
};

/// Who runs a worker: our own engines, or an external API provider.
enum class provider_kind {
  none,      ///< A self-hosted engine (SGLang, vLLM, troupe-sim).
  openai,    ///< An OpenAI-compatible provider.
  anthropic, ///< An Anthropic-compatible provider.
};

/// The engine a worker runs, which decides how a prefill/decode pair hands the KV cache over.
enum class engine_runtime : std::uint8_t {
  sglang, ///< Dual dispatch: both legs at once, bootstrap fields (SGLang).
  vllm,   ///< In sequence: prefill first, decode fed with its `kv_transfer_params` (vLLM).
};

/// vLLM's KV connector of a prefill worker (`kv_transfer_config.kv_connector`).
enum class kv_connector : std::uint8_t {
  unset,       ///< Not given (nor reported): NIXL, the connector vLLM's PD examples use.
  nixl,        ///< NixlConnector: tag the prefill, relay the params it returns.
  mooncake,    ///< MooncakeConnector: mint a transfer id, synthesize the decode's params.
  passthrough, ///< Neither: relay whatever the prefill returns, tag nothing (smg's default).
};

std::string_view to_string(engine_runtime r) noexcept;
std::string_view to_string(kv_connector c) noexcept;

/// `sglang` or `vllm`, any case (smg's spellings); nothing for another name.
std::optional<engine_runtime> parse_runtime(std::string_view s) noexcept;

/// `NixlConnector`/`nixl`, `MooncakeConnector`/`mooncake`, `passthrough`, any case.
std::optional<kv_connector> parse_kv_connector(std::string_view s) noexcept;

std::string_view to_string(worker_type t) noexcept;
std::string_view to_string(provider_kind p) noexcept;
std::optional<worker_type> parse_worker_type(std::string_view s) noexcept;
std::optional<provider_kind> parse_provider(std::string_view s) noexcept;

/// What an operator gives to register a worker (flag or `POST /workers`).
struct worker_spec {
  std::string url;                              ///< Base URL, `http://host:port`.
  worker_type type = worker_type::regular;      ///< Role.
  std::optional<std::uint16_t> bootstrap_port;  ///< Prefill only: the KV-transfer bootstrap port.
  std::optional<std::string> model_id;          ///< Model served; asked from the worker if unset.
  provider_kind provider = provider_kind::none; ///< External provider, if any.
  std::string api_key;                          ///< Secret sent to the worker; never shown back.
  /// The engine it runs; unset: what the worker says of itself (`/v1/models` `owned_by`),
  /// else SGLang. A prefill worker's decides how its pairs run (docs/pd.md).
  std::optional<engine_runtime> runtime;
  kv_connector connector = kv_connector::unset; ///< vLLM: its KV connector, when known.
  std::string kv_engine_id;                     ///< vLLM: its KV engine id (Mooncake needs it).

  friend bool operator==(const worker_spec&, const worker_spec&) = default;
};

/// A validated spec: the spec with its URL parsed, or the reason it is invalid.
struct checked_spec {
  worker_spec spec;
  base_url url;
};

/// Validates `spec` (URL, bootstrap port only for prefill workers, ...). On failure returns
/// nothing and sets `why`.
std::optional<checked_spec> check(worker_spec spec, std::string& why);

/// Reads a spec from the JSON body of `POST /workers`; unknown fields are rejected so that a
/// typo does not silently register a different worker. Sets `why` and returns nothing on error.
std::optional<worker_spec> worker_spec_from_json(const nlohmann::json& body, std::string& why);

/// Model ids listed by a worker's `/v1/models` answer, or its `/get_model_info` `model_path`.
std::vector<std::string> models_from_listing(const nlohmann::json& body);

} // namespace troupe::protocol
