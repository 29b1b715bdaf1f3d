#pragma once

#include "actors/fleet.hpp"
#include "actors/policies/pick_rng.hpp"
#include "actors/policies/policy_config.hpp"
#include "actors/policies/selection.hpp"
#include "actors/policies/shared_prefix_view.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// The time a strategy sees: its policy actor's clock (the testing scheduler's in tests), so
/// idle expiry and time windows need no timer and no thread.
using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

/// How a policy picks one worker among the candidates of a request.
class strategy {
public:
  virtual ~strategy() = default;

  /// The name `--policy` uses.
  virtual std::string_view name() const noexcept = 0;

  /// Sentinel of `pick`: no candidate may take the request.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// An index into `candidates` (every worker of the request's role, model and provider, as
  /// the fleet index lists them: routable or not) of one that `eligible` accepts, or npos.
  /// A pick costs O(1) in the number of candidates (or O(log) for the ring): strategies
  /// sample or walk, they never scan the list, except to find the one eligible candidate
  /// among many that are not.
  virtual std::size_t pick(const std::vector<const worker_entry*>& candidates,
                           const selection& sel) = 0;

  /// True when `pick` may run on any thread at once and the strategy follows no fleet state
  /// (`on_fleet` does nothing, no prefix view, no placement, no refusal of its own): requests
  /// then pick without a message to the policy actor (`direct_picker`, docs/architecture.md).
  virtual bool concurrent() const noexcept { return false; }

  /// Why the last pick that returned npos refused candidates that were eligible (the client's
  /// 503 message: a cap of the strategy's own), or empty when none was eligible (the policy
  /// says which workers are missing).
  virtual std::string refusal() const { return {}; }

  /// A new fleet snapshot; the policy serves workers of `role`. `change` leads from the
  /// snapshot this strategy took in last to `fleet` (nullptr when not known: take it in whole).
  /// Strategies with per-worker state drop that of the workers that left.
  virtual void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                        protocol::worker_type role) {}

  /// The same with the snapshot's own change (it follows the one taken in before it).
  void on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) {
    on_fleet(fleet, fleet.change.get(), role);
  }

  /// The shared prefix view of a cluster (docs/cluster.md): moves what this node's picks
  /// recorded since the last call into `out` (with `fresh_only`, only the blocks new to their
  /// worker). False when the strategy keeps no view.
  virtual bool take_prefixes(prefix_drain& out, bool fresh_only) { return false; }

  /// True when picks since the last take placed blocks new to their worker: the cluster should
  /// hear of them now, not at the next gossip tick.
  virtual bool prefixes_fresh() const { return false; }

  /// Merges what another node's picks recorded (strategies without a view ignore it).
  virtual void merge_prefixes(const protocol::prefix_update& update) {}

  // -- placement by owner (docs/cluster.md): strategies without a view keep the defaults --

  /// Whether this pick's prompt is for the owner of its prefix group to place: every pick of
  /// a prompt (`every`), or only one no candidate holds enough of. When so, fills `ask` with
  /// what the owner needs (block hashes, rank seed, length, the candidates looked at) and
  /// returns true; the pick then comes by `place` (or `pick`, when no answer comes).
  virtual bool placement_query(const std::vector<const worker_entry*>& candidates,
                               const selection& sel, bool every, protocol::placement_ask& ask) {
    return false;
  }

  /// The owner chose `worker` for this pick: its index in `candidates`, the prompt recorded for
  /// it as a pick's would be, when it may take the request; else npos (decide by `pick`).
  virtual std::size_t place(const std::vector<const worker_entry*>& candidates,
                            const selection& sel, std::string_view worker) {
    return npos;
  }

  /// As the owner of `ask`'s prefix group: the worker the prompt goes to, recorded in the view
  /// (so the next ask gets the same answer) and sent to the members like a pick's blocks; empty
  /// when none of the candidates is known here.
  virtual std::string decide(const protocol::placement_ask& ask) { return {}; }

  /// The strategy's own state for the admin endpoint (cursor, ...).
  virtual nlohmann::json describe() const = 0;
};

/// A random engine of the calling thread's own (for strategies that pick on any thread).
pick_rng& thread_rng();

/// True when `w` may take the request `sel` now: routable, and not tried by it already.
bool eligible(const worker_entry& w, const selection& sel);

/// A uniformly random eligible candidate other than `skip`: a few random draws, then (when
/// they all missed: most candidates unroutable) one pass over the list; npos when none.
std::size_t random_eligible(const std::vector<const worker_entry*>& candidates,
                            const selection& sel, pick_rng& rng, std::size_t skip = strategy::npos);

/// Candidates a strategy that compares them looks at per pick, at most: a pick costs the same
/// with 4 workers or 4,000 (the power of `sample_size` choices where smg looks at all).
inline constexpr std::size_t sample_size = 32;

/// A uniform index below `n` (n > 0) from one output of `rng`: the high bits of the 128-bit
/// product (Lemire), whose bias is below n / 2^64, none that a fleet of any size could show.
/// One multiplication where `std::uniform_int_distribution` costs ~30 instructions a draw.
inline std::size_t draw_index(pick_rng& rng, std::size_t n) {
  return static_cast<std::size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

/// How `eligible_sample` hands a large group's draws back.
enum class sample_order {
  /// Sorted and unique, as in a scan of the list: ties between them go to the first listed.
  listed,
  /// As drawn, repeats kept: the first best of them is a uniform choice among the best drawn
  /// (the draws are), so a strategy needs no draw of its own to break ties, nor a sort.
  drawn,
};

/// Fills `out` with indices of eligible candidates: every one of a list of at most `max`, in
/// list order; else `max` random draws (`random_eligible`), in the `order` asked for.
/// Empty when none is eligible. True when `out` holds draws (the group was larger than `max`).
bool eligible_sample(const std::vector<const worker_entry*>& candidates, const selection& sel,
                     pick_rng& rng, std::vector<std::size_t>& out, std::size_t max = sample_size,
                     sample_order order = sample_order::listed);

/// Each worker in turn.
std::unique_ptr<strategy> make_round_robin();

/// A uniformly random worker.
std::unique_ptr<strategy> make_random();

/// The less loaded of two random workers (load = requests in flight).
std::unique_ptr<strategy> make_power_of_two();

/// Prefix-cache affinity: the worker that already holds most of the prompt, while the load is
/// balanced (docs/policies.md).
std::unique_ptr<strategy> make_cache_aware(const policy_config& cfg, clock_fn now = {});

/// A hash ring over the workers keyed by the request's routing key; power of two without a key
/// (docs/policies.md).
std::unique_ptr<strategy> make_consistent_hash();

/// The least loaded worker (smg's `least_load` with no engine load reports: join the shortest
/// queue), uniformly at random among ties; workers at `--least-load-max-waiting-requests` are
/// skipped (docs/policies.md).
std::unique_ptr<strategy> make_least_load(const policy_config& cfg);

/// A hash ring keyed by the prompt's head (or the routing key), walking to a less loaded
/// worker when the owner is overloaded (docs/policies.md).
std::unique_ptr<strategy> make_prefix_hash(const policy_config& cfg);

/// Sticky sessions: each routing key keeps the worker it was first given until that worker
/// cannot take it or the key is idle for `--max-idle-secs` (docs/policies.md).
std::unique_ptr<strategy> make_manual(const policy_config& cfg, clock_fn now);

/// Request-length buckets: each worker takes a range of prompt lengths, the ranges adapted to
/// the traffic so each worker gets a like share of the prompt bytes (docs/policies.md).
std::unique_ptr<strategy> make_bucket(const policy_config& cfg, clock_fn now);

/// The strategy named `name` (smg's `consistent_hashing` is `consistent_hash`), or nullptr.
/// `now` is its clock (default: the steady clock).
std::unique_ptr<strategy> make_strategy(std::string_view name, const policy_config& cfg = {},
                                        clock_fn now = {});

} // namespace troupe::actors
