#pragma once

#include "actors/worker_list.hpp"
#include "actors/worker_live.hpp"
#include "actors/worker_proxy.hpp"
#include "protocol/string_hash.hpp"
#include "protocol/worker.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::services {
class metrics;
} // namespace troupe::services

namespace troupe::actors {

/// One registered worker as the fleet snapshot shows it. Immutable once published (a change
/// is a new entry), and shared by every snapshot it is part of; its live state (load,
/// health, breaker) is read through `live`.
struct worker_entry : std::enable_shared_from_this<worker_entry> {
  std::string id;                  ///< Registry id, e.g. `w-3f9c2a1b`.
  protocol::worker_spec spec;      ///< As registered (url canonical).
  protocol::base_url url;          ///< Parsed `spec.url`.
  std::vector<std::string> models; ///< Model ids served (empty until discovered).
  worker_proxy_actor proxy;        ///< The actor that owns the worker's connections and health.
  worker_channel_ptr channel;      ///< How requests reach the worker (no message to its proxy).
  std::shared_ptr<worker_live> live;
  std::chrono::system_clock::time_point registered_at;
  std::uint64_t version = 0; ///< Version of its registration record (cluster: last writer wins).
  std::string origin;        ///< Node that wrote that version.
  /// The worker has an api key that did not reach this node (its record came over a cluster
  /// link without TLS, and this node was not given the key itself): served without one.
  bool key_missing = false;
  /// Registration order on this node (kept by a new model card): candidate groups list
  /// workers in this order, however late each one's models were discovered. One per worker
  /// on the node: a worker removed and registered again gets a new one.
  std::uint64_t seq = 0;

  /// True when the worker serves `model` (or any model when `model` is empty).
  bool serves(std::string_view model) const;
};

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

/// A set of providers, one bit per `protocol::provider_kind`.
using provider_set = unsigned;

/// The bit of `p` in a provider_set.
constexpr provider_set provider_bit(protocol::provider_kind p) {
  return 1u << static_cast<unsigned>(p);
}

/// The workers of one role that serve one model, by provider, in registration order:
/// routable or not (health changes without a registry write; policies look at it per pick).
struct candidate_group {
  provider_set providers = 0; ///< The providers with at least one worker here.
  std::array<std::vector<const worker_entry*>, 3> by_provider; ///< By `provider_kind`.
};

/// Which workers serve what, by (role, model): the candidates of a request without a scan of
/// the fleet. Kept by the registry on every write and published with the snapshot. A value
/// that shares its groups: a write copies the map of models (one entry per model served, not
/// per worker) and rebuilds only the groups of the models the written worker serves.
/// Pointers in the groups are entries of the snapshot the index was published with.
class fleet_index {
public:
  /// The workers of `role` serving `model` (any model when empty); nullptr when none.
  const candidate_group* find(protocol::worker_type role, std::string_view model) const;

  /// How `model` is served (any model when empty).
  model_service service_of(std::string_view model) const;

  /// This index with `w` added to the groups of its role and of each model it serves.
  fleet_index with(const worker_entry& w) const;

  /// This index without `w` (the same entry that was added).
  fleet_index without(const worker_entry& w) const;

  /// This index with `next` in the place of `old` (same role and provider: a new model
  /// card): in the groups of models both serve, `next` keeps `old`'s place.
  fleet_index replaced(const worker_entry& old, const worker_entry& next) const;

  /// The index of `workers`, built from scratch.
  static fleet_index of(const worker_list& workers);

  /// Models with at least one worker (the any-model group aside).
  std::size_t model_count() const noexcept;

private:
  using group_ptr = std::shared_ptr<const candidate_group>;
  using by_role = std::array<group_ptr, 3>; ///< By `worker_type`.
  /// Model id -> groups; the key "" holds every worker that serves some model.
  using model_map =
      std::unordered_map<std::string, by_role, protocol::string_hash, std::equal_to<>>;

  fleet_index edit(const worker_entry& w, bool add) const;

  /// Adds `w` to (or removes it from) the group of `model`, role slot `slot`, provider
  /// `provider` in `map`: the group is copied, not changed in place (snapshots share it);
  /// an empty group, and a model left with none, are dropped.
  static void edit_group(model_map& map, const std::string& model, std::size_t slot,
                         std::size_t provider, const worker_entry& w, bool add);

  std::shared_ptr<const model_map> models_ = std::make_shared<const model_map>();
};

/// What changed in the fleet since the snapshot the registry last sent its listeners: the
/// entries that came and those that went (a new model card is one of each). Lets a policy
/// follow the fleet in O(change) instead of a pass over every worker. Holds no entry: an
/// entry that went may be freed already (its proxy must not be kept alive by a change), so
/// it is named by address (compared, never read), id, url and role.
struct fleet_change {
  /// An entry that went.
  struct gone {
    const worker_entry* entry = nullptr; ///< Its address: compare, never dereference.
    std::string id;
    std::string url;
    protocol::worker_type role = protocol::worker_type::regular;
  };

  std::uint64_t from = 0; ///< Version of the snapshot this change starts from.
  /// Entries of the snapshot carrying the change that `from` did not have, in registration
  /// order of their arrival.
  std::vector<const worker_entry*> added;
  std::vector<gone> removed; ///< Entries of `from` this snapshot does not have.
};

/// An immutable view of the fleet, published by the registry on every change.
struct fleet_snapshot {
  std::uint64_t version = 0; ///< Increases with every change.
  /// In registration order; shared with the snapshots before it where a write did not touch it.
  worker_list workers;
  /// Order-independent hash of the registry's records, tombstones included: nodes holding
  /// the same registrations have the same digest (see protocol::record_hash).
  std::uint64_t digest = 0;
  /// Highest record version the registry holds: the shared registry version, the same on
  /// every node once their registries converged.
  std::uint64_t shared_version = 0;

  /// Candidates by (role, model), for the workers above.
  fleet_index index;

  /// How this snapshot differs from the one of version `change->from`; nullptr when not known
  /// (a snapshot built by hand, the registry stopping): a listener then takes it in whole.
  std::shared_ptr<const fleet_change> change;

  /// The worker with `id`, or nullptr (a scan: for the management API, not the data plane).
  const worker_entry* find(std::string_view id) const;

  /// How `model` is served; an empty model means "any". O(1): from the index.
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
