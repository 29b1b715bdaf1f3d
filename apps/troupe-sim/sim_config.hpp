#pragma once

#include "apps/troupe-sim/latency_model.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace CLI {
class App;
} // namespace CLI

namespace troupe::sim {

/// The part a worker plays, as SGLang's `--disaggregation-mode`.
enum class worker_role {
  regular, ///< Prefill and decode in one engine.
  prefill, ///< Computes the prompt, publishes the room on its bootstrap server, returns 1 token.
  decode,  ///< Waits for the prefill of the request's room, then produces the tokens.
};

/// `regular`, `prefill` or `decode`.
std::string_view to_string(worker_role r) noexcept;

/// The engine a worker plays, which decides how its PD roles hand the KV cache over.
enum class engine_runtime {
  sglang, ///< Dual dispatch: both roles get the request at once and meet in a bootstrap room.
  vllm,   ///< Sequential: the prefill returns `kv_transfer_params`, the decode fetches the blocks.
};

/// `sglang` or `vllm`.
std::string_view to_string(engine_runtime r) noexcept;

/// vLLM's KV connector a worker plays (`kv_transfer_config.kv_connector`).
enum class kv_connector {
  nixl,     ///< NixlConnector: the prefill returns the block ids, the decode pulls them.
  mooncake, ///< MooncakeConnector: the gateway mints a transfer id and names the prefill.
};

/// `NixlConnector` or `MooncakeConnector`.
std::string_view to_string(kv_connector c) noexcept;

/// Every setting of the simulator. Those in `runtime_knobs()` may change while it runs.
struct sim_config {
  // -- serving --
  std::string host = "127.0.0.1";     ///< Address of the main port.
  std::uint16_t port = 30000;         ///< Main HTTP port.
  std::string model_id = "sim-model"; ///< The one model served.
  worker_role role = worker_role::regular;
  engine_runtime runtime = engine_runtime::sglang; ///< The engine played.
  std::uint16_t bootstrap_port = 8998; ///< Bootstrap (SGLang) or KV side-channel (vLLM) port.
  kv_connector connector = kv_connector::nixl; ///< vLLM: the KV connector played.
  std::string kv_engine_id;                    ///< vLLM: the engine id; empty: a fresh one.
  std::size_t request_log_size = 1000;         ///< Requests kept for `GET /sim/requests`.
  std::string log_level = "info";              ///< spdlog level.
  std::uint64_t seed = 0; ///< Seed of the random choices (error rate, ids); 0: fresh.

  // -- model --
  std::size_t context_length = 32768;        ///< Reported context length.
  std::size_t embedding_dim = 64;            ///< Default embedding size.
  std::size_t cache_block_tokens = 16;       ///< Tokens per prefix-cache block.
  std::size_t cache_capacity_blocks = 65536; ///< Prefix-cache bound; 0 disables the cache.

  // -- run-time knobs --
  double ttft_base_ms = 20;         ///< Fixed part of the time to first token.
  double prefill_us_per_token = 20; ///< Prefill cost per uncached prompt token.
  double itl_ms = 10;               ///< Time between output tokens.
  std::int64_t output_tokens = 16;  ///< Tokens a sequence wants to write (capped by max tokens).
  double load_slowdown = 0;         ///< Slowdown per concurrent request beyond the first.
  double error_rate = 0;            ///< Fraction of data-plane requests answered 500.
  std::int64_t fail_status = 0;     ///< When non-zero, every data-plane request gets this status.
  double stall_ms = 0;              ///< Delay before a data-plane request is looked at.
  std::int64_t drop_after_events = -1; ///< Close the connection after this many SSE events.
  std::int64_t health_status = 200;    ///< What `GET /health` answers.
  double bootstrap_timeout_ms = 5000;  ///< How long a decode waits for its prefill.
  double kv_transfer_us_per_token = 2; ///< vLLM decode: time to fetch one token's KV.
  double kv_hold_timeout_ms = 480000;  ///< vLLM prefill: how long unread KV blocks stay pinned.
};

/// One run-time knob: a member of `sim_config`, its flag and its JSON name.
struct knob {
  std::string_view name; ///< JSON name in `/sim/config`; the flag is `--` + name with dashes.
  std::string_view help;
  std::variant<double sim_config::*, std::int64_t sim_config::*> member;
  double min; ///< Smallest valid value.
  double max; ///< Largest valid value.
};

/// The knobs `POST /sim/config` may change, in documentation order.
std::span<const knob> runtime_knobs() noexcept;

/// Declares every setting as a flag of `app`, bound to `cfg`.
void add_flags(CLI::App& app, sim_config& cfg);

/// Checks the settings together; the reason of the first problem, if any.
std::optional<std::string> validate(const sim_config& cfg);

/// Applies the knobs of a JSON object (`{"itl_ms": 5, ...}`) to `cfg`: all or nothing. Unknown
/// names, ill-typed or out-of-range values are refused with the reason.
std::optional<std::string> apply_knobs(sim_config& cfg, const nlohmann::json& knobs);

/// Every setting, as `GET`/`POST /sim/config` show it.
nlohmann::json to_json(const sim_config& cfg);

/// The latency part of `cfg`.
latency_knobs latency(const sim_config& cfg) noexcept;

} // namespace troupe::sim
