#include "actors/policies/candidate_positions.hpp"
#include "actors/policies/fleet_cursor.hpp"
#include "actors/policies/strategy.hpp"

#include <algorithm>
#include <list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

namespace {

using clock_type = std::chrono::steady_clock;

/// smg's `manual` policy (docs/policies.md): sticky sessions by routing key. A key's first
/// request picks a worker by the assignment mode; later ones go to the same worker as long as
/// it can take them. When it cannot, another is assigned and remembered beside it (two per key,
/// smg's bound), and the first comes back first when it recovers. Workers joining move no key
/// (unlike consistent hashing). A key idle for `--max-idle-secs` is forgotten: exactly then,
/// not at a sweep, because the keys sit in a list by last use and each pick drops the expired
/// tail. At most `max_routing_keys` keys are kept (least recently used dropped first).
class manual final : public strategy {
public:
  manual(const policy_config& cfg, clock_fn now) : cfg_(cfg), now_(std::move(now)) {}

  std::string_view name() const noexcept override { return "manual"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    const auto now = now_();
    expire(now);
    if (sel.routing_key.empty()) {
      ++no_key_;
      return assign(cands, sel);
    }
    auto it = index_.find(sel.routing_key);
    if (it == index_.end()) {
      auto k = assign(cands, sel);
      if (k == npos) {
        return npos;
      }
      lru_.push_front({sel.routing_key, {cands[k]->id}, {cands[k]->seq}, cands[k]->id, now});
      index_.emplace(lru_.front().key, lru_.begin());
      ++group_[cands[k]->id];
      ++new_keys_;
      while (index_.size() > std::max<std::size_t>(cfg_.max_routing_keys, 1)) {
        forget(std::prev(lru_.end()));
        ++dropped_;
      }
      return k;
    }
    auto e = it->second;
    lru_.splice(lru_.begin(), lru_, e); // most recently used first
    e->last = now;
    for (std::size_t j = 0; j < e->workers.size(); ++j) {
      auto& id = e->workers[j];
      if (auto i = position_of(cands, e->seqs[j], id); i != npos && eligible(*cands[i], sel)) {
        ++hits_;
        serve(*e, id);
        return i;
      }
    }
    // None of its workers can take it now: another one, remembered after them.
    auto k = assign(cands, sel);
    if (k == npos) {
      return npos;
    }
    if (e->workers.size() >= max_candidates) {
      e->workers.erase(e->workers.begin());
      e->seqs.erase(e->seqs.begin());
    }
    e->workers.push_back(cands[k]->id);
    e->seqs.push_back(cands[k]->seq);
    serve(*e, cands[k]->id);
    ++reassigned_;
    return k;
  }

  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                protocol::worker_type role) override {
    // Keys keep the ids of workers that left (a miss reassigns them); their counts go.
    if ((change = cursor_.advance(fleet, change))) {
      // O(change): the ids removed and not added back (a new model card keeps its id).
      std::unordered_set<std::string_view> back;
      for (auto* w : change->added) {
        if (w->spec.type == role) {
          back.insert(w->id);
        }
      }
      for (auto& r : change->removed) {
        if (r.role == role && !back.count(r.id)) {
          group_.erase(r.id);
        }
      }
      return;
    }
    std::unordered_map<std::string, std::size_t> kept;
    for (auto& w : fleet.workers) {
      if (w->spec.type == role) {
        if (auto g = group_.find(w->id); g != group_.end()) {
          kept.emplace(g->first, g->second);
        }
      }
    }
    group_ = std::move(kept);
  }

  nlohmann::json describe() const override {
    auto groups = nlohmann::json::object();
    for (auto& [id, n] : group_) {
      if (n > 0) {
        groups[id] = n;
      }
    }
    return {{"routing_keys", index_.size()},
            {"max_idle_secs", cfg_.max_idle.count()},
            {"assignment_mode", cfg_.assignment_mode},
            {"max_routing_keys", cfg_.max_routing_keys},
            {"keys_by_worker", std::move(groups)},
            {"expired", expired_},
            {"dropped", dropped_},
            {"picks",
             {{"sticky", hits_},
              {"reassigned", reassigned_},
              {"new_key", new_keys_},
              {"no_key", no_key_}}}};
  }

private:
  /// Workers remembered per key (smg's bound): the first assigned, and its stand-in.
  static constexpr std::size_t max_candidates = 2;

  struct entry {
    std::string key;
    std::vector<std::string> workers; ///< Worker ids, the first assigned first.
    std::vector<std::uint64_t> seqs;  ///< Their registration order (where to find them).
    std::string current;              ///< The worker its last request went to.
    clock_type::time_point last;      ///< Last use.
  };
  using lru_list = std::list<entry>;

  /// The key's requests now go to `id` (min_group counts keys by the worker serving them).
  void serve(entry& e, const std::string& id) {
    if (e.current == id) {
      return;
    }
    if (auto g = group_.find(e.current); g != group_.end() && g->second > 0) {
      --g->second;
    }
    e.current = id;
    ++group_[id];
  }

  void expire(clock_type::time_point now) {
    while (!lru_.empty() && now - lru_.back().last >= cfg_.max_idle) {
      forget(std::prev(lru_.end()));
      ++expired_;
    }
  }

  void forget(lru_list::iterator e) {
    if (auto g = group_.find(e->current); g != group_.end() && g->second > 0) {
      --g->second;
    }
    index_.erase(e->key);
    lru_.erase(e);
  }

  /// A worker for a new key (or one whose workers are gone), by the assignment mode, among
  /// the eligible candidates (a sample of a large group for the min_* modes); npos when none.
  std::size_t assign(const std::vector<const worker_entry*>& cands, const selection& sel) {
    const auto& mode = cfg_.assignment_mode;
    if (mode == "min_load" || mode == "delegate") {
      // `delegate` hands the first assignment to the policy underneath; with manual as the
      // policy there is none, and smg falls back to min_load too.
      return min_by(cands, sel, [](const worker_entry& w) { return w.live->load(); });
    }
    if (mode == "min_group") {
      return min_by(cands, sel, [this](const worker_entry& w) {
        auto g = group_.find(w.id);
        return g == group_.end() ? std::size_t{0} : g->second;
      });
    }
    return random_eligible(cands, sel, rng_);
  }

  /// The eligible candidate with the smallest `value`, uniformly at random among ties (of
  /// the sample of a large group: the first of its draws, already random); npos when none is
  /// eligible.
  template <class Value>
  std::size_t min_by(const std::vector<const worker_entry*>& cands, const selection& sel,
                     Value value) {
    const bool break_ties =
        !eligible_sample(cands, sel, rng_, sample_, sample_size, sample_order::drawn);
    if (sample_.empty()) {
      return npos;
    }
    std::size_t best = sample_[0];
    auto best_value = value(*cands[best]);
    std::uint64_t tied = 1;
    for (std::size_t j = 1; j < sample_.size(); ++j) {
      auto i = sample_[j];
      auto v = value(*cands[i]);
      if (v < best_value) {
        best = i;
        best_value = v;
        tied = 1;
      } else if (break_ties && v == best_value && draw_index(rng_, ++tied) == 0) {
        best = i;
      }
    }
    return best;
  }

  policy_config cfg_;
  clock_fn now_;
  lru_list lru_; ///< Most recently used first.
  std::unordered_map<std::string, lru_list::iterator> index_;
  std::unordered_map<std::string, std::size_t> group_; ///< Keys each worker serves now.
  fleet_cursor cursor_;                                ///< The snapshot `group_` follows.
  std::vector<std::size_t> sample_;                    ///< Scratch: the candidates compared.
  pick_rng rng_ = pick_rng::seeded();
  std::uint64_t hits_ = 0;
  std::uint64_t reassigned_ = 0;
  std::uint64_t new_keys_ = 0;
  std::uint64_t no_key_ = 0;
  std::uint64_t expired_ = 0;
  std::uint64_t dropped_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_manual(const policy_config& cfg, clock_fn now) {
  return std::make_unique<manual>(cfg, std::move(now));
}

} // namespace troupe::actors
