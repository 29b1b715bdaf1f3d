#pragma once

#include "apps/troupe-sim/exchange.hpp"

namespace troupe::sim {

struct sim_context;

// The control API of tests (`/sim/*`); see docs/simulator.md.

/// `GET /sim/requests`: the request log.
void serve_sim_requests(const sim_context& ctx, exchange& x);

/// `DELETE /sim/requests`: clears the request log.
void serve_sim_clear_requests(sim_context& ctx, exchange& x);

/// `GET /sim/config`: every setting.
void serve_sim_config(const sim_context& ctx, exchange& x);

/// `POST /sim/config`: changes run-time knobs (all or nothing), answers every setting.
void serve_sim_set_config(sim_context& ctx, exchange& x);

/// `GET /sim/stats`: in-flight and total requests, the prefix cache, the PD rendezvous.
void serve_sim_stats(const sim_context& ctx, exchange& x);

} // namespace troupe::sim
