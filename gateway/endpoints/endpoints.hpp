#pragma once

#include "gateway/route_table.hpp"

namespace troupe::gateway {

/// Data plane: every proxied route (one request actor each).
void add_data_plane_routes(route_table& routes);

/// Health probes and the model list: `/health`, `/liveness`, `/readiness`, `/v1/models`.
void add_info_routes(route_table& routes);

/// Worker management: `POST/GET /workers`, `GET/DELETE /workers/{id}`.
void add_worker_routes(route_table& routes);

/// smg's cache and load utilities, one call to every self-hosted worker joined into one
/// answer: `POST /flush_cache`, `GET /get_loads`.
void add_fleet_op_routes(route_table& routes);

/// Admin: `GET /admin` (the page), `/admin/actors[/{id}]`, `/admin/requests`, `/admin/cluster`,
/// `/admin/workers`; they need `--admin-api-key` (else `--api-key`) when one is set.
void add_admin_routes(route_table& routes);

} // namespace troupe::gateway
