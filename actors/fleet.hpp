#pragma once

#include "actors/worker_live.hpp"
#include "actors/worker_proxy.hpp"
#include "protocol/worker.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::services {
class metrics;
} // namespace troupe::services

namespace troupe::actors {

/// One registered worker as the fleet snapshot shows it. Immutable once published; its live
/// state (load, health, breaker) is read through `live`.
struct worker_entry {
  std::string id;                  ///< Registry id, e.g. `w-3f9c2a1b`.
  protocol::worker_spec spec;      ///< As registered (url canonical).
  protocol::base_url url;          ///< Parsed `spec.url`.
  std::vector<std::string> models; ///< Model ids served (empty until discovered).
  worker_proxy_actor proxy;        ///< The actor that talks to the worker.
  std::shared_ptr<worker_live> live;
  std::chrono::system_clock::time_point registered_at;
  std::uint64_t version = 0; ///< Version of its registration record (cluster: last writer wins).
  std::string origin;        ///< Node that wrote that version.
  /// The worker has an api key that did not reach this node (its record came over a cluster
  /// link without TLS, and this node was not given the key itself): served without one.
  bool key_missing = false;

  /// True when the worker serves `model` (or any model when `model` is empty).
  bool serves(std::string_view model) const;
};

using worker_entry_ptr = std::shared_ptr<const worker_entry>;

/// The engine `w` runs: as registered, else as it reported, else SGLang.
protocol::engine_runtime runtime_of(const worker_entry& w);

/// `w`'s KV connector: as registered, else as it reported (`unset` when neither says).
protocol::kv_connector connector_of(const worker_entry& w);

/// `w`'s KV engine id: as registered, else as it reported (empty when neither says).
std::string kv_engine_id_of(const worker_entry& w);

/// The public view of a worker (`GET /workers`): everything but its api key.
nlohmann::json to_json(const worker_entry& w);

/// How a model is served, judged from the registered workers (health aside: a model whose
/// workers are all down is still known, and answers 503 rather than 404).
struct model_service {
  bool known = false;   ///< Some worker serves it.
  bool regular = false; ///< Some regular worker serves it.
  bool pd = false;      ///< Some prefill and some decode worker serve it.
  bool prefill = false; ///< Some prefill worker serves it.
  bool decode = false;  ///< Some decode worker serves it.
};

/// An immutable view of the fleet, published by the registry on every change.
struct fleet_snapshot {
  std::uint64_t version = 0;             ///< Increases with every change.
  std::vector<worker_entry_ptr> workers; ///< In registration order.
  /// Order-independent hash of the registry's records, tombstones included: nodes holding
  /// the same registrations have the same digest (see protocol::record_hash).
  std::uint64_t digest = 0;
  /// Highest record version the registry holds: the shared registry version, the same on
  /// every node once their registries converged.
  std::uint64_t shared_version = 0;

  /// The worker with `id`, or nullptr.
  const worker_entry* find(std::string_view id) const;

  /// How `model` is served; an empty model means "any".
  model_service service_of(std::string_view model) const;

  /// True when at least one worker could take a request now.
  bool any_routable() const;
};

using fleet_ptr = std::shared_ptr<const fleet_snapshot>;

/// The current snapshot, readable from any thread without a message. The registry is its only
/// writer.
class fleet_view {
public:
  fleet_view() : current_(std::make_shared<const fleet_snapshot>()) {}

  fleet_ptr get() const {
    std::lock_guard guard{mx_};
    return current_;
  }

  void set(fleet_ptr next) {
    std::lock_guard guard{mx_};
    current_ = std::move(next);
  }

private:
  mutable std::mutex mx_;
  fleet_ptr current_;
};

/// Lets `m` read the worker gauges (`troupe_worker_*`) from the snapshot `view` holds when it
/// is scraped: always current, and a removed worker's series go with it.
void watch_fleet(services::metrics& m, std::shared_ptr<const fleet_view> view);

} // namespace troupe::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::fleet_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::actors::worker_entry_ptr)
