#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/flat_map.hpp"
#include "actors/policies/fleet_cursor.hpp"
#include "protocol/string_hash.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::actors {

/// Small numbers for the workers of one role, stable while a worker stays (its entry replaced
/// by a new model card keeps its number): the cache-aware tree's tenants. Follows the fleet
/// by its changes (`fleet_snapshot::change`): O(workers added or removed) per snapshot, not a
/// pass over the fleet; a snapshot whose change does not start where the last one ended (the
/// first one, or one seen out of turn) is taken in whole.
class tenant_map {
public:
  using tenant = std::uint32_t;

  /// What to do with the state of a worker that left: `forget(t, id)` (its number is given
  /// again later).
  using forget_fn = std::function<void(tenant, const std::string&)>;

  /// Takes in `fleet` (its workers of `role`).
  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role, const forget_fn& forget) {
    on_fleet(fleet, fleet.change.get(), role, forget);
  }

  /// The same with `change` leading to `fleet` from the snapshot taken in before.
  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change, protocol::worker_type role,
                const forget_fn& forget);

  /// The tenant of `w` (an entry of the last snapshot, or one never seen: numbered now).
  tenant of(const worker_entry& w);

  /// The tenant of worker `id` (present), or nullptr.
  const tenant* find(std::string_view id) const;

  /// The tenant of `w` (by its address when an entry of the last snapshot, else by id), or
  /// nullptr; numbers none. The pointer is valid until the map next changes.
  const tenant* find(const worker_entry& w) const;

  /// Starts loading what `of(w)` and `find(w)` read first, for a batch of lookups (a pick's
  /// sampled candidates) to wait for memory about once.
  void prefetch(const worker_entry& w) const noexcept { by_entry_.prefetch(&w); }

  /// The entry of tenant `t` in the last snapshot, or nullptr.
  const worker_entry* entry(tenant t) const noexcept {
    return t < entry_of_.size() ? entry_of_[t] : nullptr;
  }

  /// Tenant numbers given so far (the highest + 1).
  std::size_t capacity() const noexcept { return entry_of_.size(); }

  /// Calls `f(id, t)` for every worker present.
  template <class F> void each(F f) const {
    for (auto& [id, t] : by_id_) {
      f(id, t);
    }
  }

  /// Snapshots taken in whole (for tests and the admin view).
  std::uint64_t rebuilds() const noexcept { return rebuilds_; }

private:
  tenant number(const std::string& id);
  void apply(const fleet_change& change, protocol::worker_type role, const forget_fn& forget);
  void rebuild(const fleet_snapshot& fleet, protocol::worker_type role, const forget_fn& forget);
  void release(std::string_view id, const forget_fn& forget);

  fleet_cursor cursor_;
  std::unordered_map<std::string, tenant, protocol::string_hash, std::equal_to<>> by_id_;
  flat_map<const worker_entry*, tenant> by_entry_; ///< Entries of the last snapshot.
  std::vector<const worker_entry*> entry_of_;      ///< By tenant.
  std::vector<tenant> free_;                       ///< Numbers of workers gone.
  std::uint64_t rebuilds_ = 0;
};

} // namespace troupe::actors
