#pragma once

#include "actors/fleet.hpp"
#include "actors/gateway_config.hpp"
#include "actors/inspector.hpp"
#include "actors/policy.hpp"
#include "actors/registry.hpp"
#include "protocol/bootstrap.hpp"
#include "services/admission.hpp"
#include "services/cluster_view.hpp"
#include "services/metrics.hpp"
#include "services/request_tracker.hpp"
#include "services/response_affinity.hpp"

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <memory>

namespace troupe::actors {

/// What a request actor and the endpoints need from the node: its settings, the fleet view
/// and the long-lived actors. Built once at start-up, shared read-only.
struct gateway_services {
  caf::actor_system& sys;
  boost::asio::io_context& ioc;
  gateway_config cfg;
  std::shared_ptr<fleet_view> fleet;
  registry_actor registry;
  policy_actor regular_policy;
  policy_actor prefill_policy;
  policy_actor decode_policy;
  std::shared_ptr<services::request_tracker> tracker;
  std::shared_ptr<services::response_affinity> responses; ///< Which worker stores which response.
  /// Selection without a message to the policy, where its strategy allows it (else null).
  std::shared_ptr<const direct_picker> regular_picker{};
  std::shared_ptr<const direct_picker> prefill_picker{};
  std::shared_ptr<const direct_picker> decode_picker{};
  /// Bootstrap rooms of prefill/decode requests.
  std::shared_ptr<protocol::room_source> rooms = std::make_shared<protocol::room_source>();
  /// Admission control of the data plane (null: no limit, and no cost per request).
  std::shared_ptr<services::admission_control> admission{};

  // -- observability --
  std::shared_ptr<troupe::services::metrics> metrics{}; ///< This node's metrics (null: none).
  /// What the io threads' loops count (busy polling); set by whoever runs the loops.
  std::shared_ptr<transport::io_loop_stats> io = std::make_shared<transport::io_loop_stats>();
  inspector_actor inspector{}; ///< Reads the long-lived actors' state for `/admin`.
  /// The cluster as this node sees it (written by the cluster node; empty when alone).
  std::shared_ptr<services::cluster_view> cluster = std::make_shared<services::cluster_view>();
};

using services_ptr = std::shared_ptr<const gateway_services>;

} // namespace troupe::actors
