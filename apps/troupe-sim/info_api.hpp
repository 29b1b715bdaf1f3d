#pragma once

#include "apps/troupe-sim/exchange.hpp"

#include <cstdint>

namespace troupe::sim {

struct sim_context;

// The worker information endpoints (SGLang and OpenAI), answered from the worker's state.

/// What the information endpoints report beyond the worker's context.
struct worker_facts {
  std::uint16_t port = 0;           ///< Bound main port.
  std::uint16_t bootstrap_port = 0; ///< Bound bootstrap port (role prefill), else 0.
  std::int64_t started_at = 0;      ///< Unix seconds: the model's `created`.
};

/// `GET /v1/models`: the one model.
void serve_models(const sim_context& ctx, const worker_facts& facts, exchange& x);

/// `GET /v1/models/{id}`: the model, or 404 `model_not_found`.
void serve_model(const sim_context& ctx, const worker_facts& facts, exchange& x);

/// `GET /get_model_info`.
void serve_model_info(const sim_context& ctx, exchange& x);

/// `GET /get_server_info`: SGLang's server arguments that matter, and the whole configuration.
void serve_server_info(const sim_context& ctx, const worker_facts& facts, exchange& x);

/// `GET /get_load`: one entry per DP rank (one rank), as smg reads it.
void serve_load(const sim_context& ctx, exchange& x);

/// `GET /version`: vLLM's `{"version"}` (how gateways tell vLLM from SGLang); 404 as SGLang.
void serve_version(const sim_context& ctx, exchange& x);

/// `GET /health`, `GET /health_generate`: empty 200, or `health_status` with an error body.
void serve_health(const sim_context& ctx, exchange& x);

/// `POST /flush_cache`: empties the prefix cache.
void serve_flush_cache(sim_context& ctx, exchange& x);

} // namespace troupe::sim
