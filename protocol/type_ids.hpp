#pragma once

// The project's one CAF type-id block: every atom, and every type that crosses the network.
// Types that never leave the process (handles to sockets, shared snapshots) are allowed as
// unsafe message types where they are declared instead (actors/messages.hpp).

#include "protocol/worker.hpp"

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>
#include <cstdint>
#include <string>
#include <vector>

CAF_BEGIN_TYPE_ID_BLOCK(troupe, caf::first_custom_type_id)

// -- atoms (verbs, at most 10 characters) --

CAF_ADD_ATOM(troupe, troupe, add_atom, "add")
CAF_ADD_ATOM(troupe, troupe, remove_atom, "remove")
CAF_ADD_ATOM(troupe, troupe, select_atom, "select")
CAF_ADD_ATOM(troupe, troupe, dispatch_atom, "dispatch")
CAF_ADD_ATOM(troupe, troupe, cancel_atom, "cancel")
CAF_ADD_ATOM(troupe, troupe, done_atom, "done")
CAF_ADD_ATOM(troupe, troupe, drain_atom, "drain")
CAF_ADD_ATOM(troupe, troupe, health_atom, "health")
CAF_ADD_ATOM(troupe, troupe, breaker_atom, "breaker")
CAF_ADD_ATOM(troupe, troupe, discover_atom, "discover")
CAF_ADD_ATOM(troupe, troupe, models_atom, "models")
CAF_ADD_ATOM(troupe, troupe, inspect_atom, "inspect")
CAF_ADD_ATOM(troupe, troupe, publish_atom, "publish")
CAF_ADD_ATOM(troupe, troupe, stop_atom, "stop")
CAF_ADD_ATOM(troupe, troupe, list_atom, "list")
CAF_ADD_ATOM(troupe, troupe, refresh_atom, "refresh")

// -- cluster (peers exchange only `gossip_atom` + msgpack bytes; see protocol/cluster_wire) --

CAF_ADD_ATOM(troupe, troupe, gossip_atom, "gossip")
CAF_ADD_ATOM(troupe, troupe, merge_atom, "merge")
CAF_ADD_ATOM(troupe, troupe, records_atom, "records")
CAF_ADD_ATOM(troupe, troupe, changes_atom, "changes")
CAF_ADD_ATOM(troupe, troupe, subscribe_atom, "subscribe")
CAF_ADD_ATOM(troupe, troupe, tick_atom, "tick")
CAF_ADD_ATOM(troupe, troupe, persist_atom, "persist")

// -- network types --

CAF_ADD_TYPE_ID(troupe, (troupe::protocol::worker_spec))

// -- added later: appended, so that the ids above stay what older builds gave them --

CAF_ADD_ATOM(troupe, troupe, endpoint_atom, "endpoint")
CAF_ADD_ATOM(troupe, troupe, prefix_atom, "prefix")
CAF_ADD_ATOM(troupe, troupe, placement_atom, "place")
CAF_ADD_ATOM(troupe, troupe, outcome_atom, "outcome")
CAF_ADD_ATOM(troupe, troupe, idle_atom, "idle")
CAF_ADD_ATOM(troupe, troupe, mailbox_atom, "mailbox")

CAF_END_TYPE_ID_BLOCK(troupe)

namespace troupe::protocol {

/// CAF 0.17 inspection of a worker spec (a local message: peers exchange registrations as
/// msgpack records, protocol/cluster_wire.hpp, and a record's api key only over TLS links).
/// Optional fields travel as 0 / empty, which are invalid values of theirs.
template <class Inspector> typename Inspector::result_type inspect(Inspector& f, worker_spec& x) {
  auto type = static_cast<std::uint8_t>(x.type);
  auto provider = static_cast<std::uint8_t>(x.provider);
  std::uint16_t bootstrap_port = x.bootstrap_port.value_or(0);
  std::string model_id = x.model_id.value_or("");
  // 0: unset; else the runtime + 1.
  std::uint8_t runtime = x.runtime ? static_cast<std::uint8_t>(*x.runtime) + 1 : 0;
  auto connector = static_cast<std::uint8_t>(x.connector);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.type = static_cast<worker_type>(type);
    x.provider = static_cast<provider_kind>(provider);
    x.runtime = runtime ? std::optional<engine_runtime>{static_cast<engine_runtime>(runtime - 1)}
                        : std::nullopt;
    x.connector = static_cast<kv_connector>(connector);
    x.bootstrap_port = bootstrap_port ? std::optional<std::uint16_t>{bootstrap_port} : std::nullopt;
    x.model_id = model_id.empty() ? std::nullopt : std::optional<std::string>{model_id};
    return caf::none;
  });
  return f(caf::meta::type_name("worker_spec"), x.url, type, bootstrap_port, model_id, provider,
           x.api_key, runtime, connector, x.kv_engine_id, load);
}

} // namespace troupe::protocol
