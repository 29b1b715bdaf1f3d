#include "actors/policies/candidate_positions.hpp"
#include "actors/policies/length_ranges.hpp"
#include "actors/policies/prompt_text.hpp"
#include "actors/policies/strategy.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

namespace {

using clock_type = std::chrono::steady_clock;

/// Prompt lengths the ranges start from, split evenly (smg's `l_max`, 4096 characters).
constexpr std::size_t initial_span = 4096;

/// smg's `bucket` policy (docs/policies.md), for prefill workers: each worker serving a model
/// takes a range of prompt lengths (bytes of the prompt), so long and short prompts do not
/// queue behind each other. The ranges start as even slices of 0..4096 and are fitted, every
/// `bucket_adjust_interval`, to the prompts of the last interval so each worker's range holds
/// a like share of their bytes (when that share moved by more than 2x). When the prompt bytes
/// the candidates took in the last interval are imbalanced (`--balance-abs-threshold` and
/// `--balance-rel-threshold`, as smg reads them), the one with the fewest takes the request.
/// A range whose worker cannot take the request passes it to the nearest range's worker.
/// A change of the model's workers moves only the ranges next to it (length_ranges): the
/// workers that stay keep theirs, where smg starts every range over.
class bucket final : public strategy {
public:
  bucket(const policy_config& cfg, clock_fn now) : cfg_(cfg), now_(std::move(now)) {}

  std::string_view name() const noexcept override { return "bucket"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    const auto now = now_();
    eligible_sample(cands, sel, rng_, sample_, sample_size, sample_order::drawn);
    if (sample_.empty()) {
      return npos;
    }
    auto& b = model_state(sel.model, cands, now);
    expire(b, now);
    if (now - b.last_adjust >= cfg_.bucket_adjust_interval) {
      adjust(b);
      b.last_adjust = now;
    }
    const auto length = prompt_text(sel.prompt, joined_).size();
    std::size_t k = imbalanced_pick(b, cands);
    if (k != npos) {
      ++balanced_;
    } else {
      k = range_pick(b, cands, sel, length);
      ++by_range_;
    }
    b.window.push_back({now, length, cands[k]->seq});
    b.bytes[cands[k]->seq] += length;
    return k;
  }

  void on_fleet(const fleet_snapshot&, const fleet_change* change,
                protocol::worker_type role) override {
    // No entry is kept (it would keep a removed worker's proxy alive): ids and registration
    // orders only. Without a change, a model's members are read from its candidates on its
    // next pick (O(W)); with one, the ranges follow it in O(change x log W).
    if (!change) {
      for (auto& [_, b] : states_) {
        b.stale = true;
      }
      return;
    }
    std::unordered_set<std::string_view> back; // a new model card: removed and added again
    for (auto* w : change->added) {
      back.insert(w->id);
    }
    for (auto& [model, b] : states_) {
      if (b.stale) {
        continue;
      }
      for (auto& g : change->removed) {
        if (back.count(g.id) == 0) {
          b.ranges.remove(g.id);
        }
      }
      for (auto* w : change->added) {
        if (w->spec.type != role || !w->serves(model)) {
          b.ranges.remove(w->id); // (when it served the model before this card)
        } else if (b.ranges.contains(w->id)) {
          b.ranges.renumber(w->id, w->seq);
        } else {
          b.ranges.add({w->id, w->seq});
        }
      }
    }
  }

  nlohmann::json describe() const override {
    auto models = nlohmann::json::object();
    for (auto& [model, b] : states_) {
      auto ranges = nlohmann::json::array();
      for (auto& r : b.ranges.list()) {
        ranges.push_back(
            {{"worker", r.who->id},
             {"from", r.from},
             {"to", r.to == max_length ? nlohmann::json(nullptr) : nlohmann::json(r.to)}});
      }
      models[model.empty() ? "*" : model] = {{"ranges", std::move(ranges)},
                                             {"window_requests", b.window.size()}};
    }
    return {{"adjust_interval_secs", cfg_.bucket_adjust_interval.count()},
            {"balance_abs_threshold", cfg_.balance_abs_threshold},
            {"balance_rel_threshold", cfg_.balance_rel_threshold},
            {"models", std::move(models)},
            {"picks", {{"by_range", by_range_}, {"imbalanced", balanced_}}}};
  }

private:
  static constexpr std::size_t max_length = length_ranges::unbounded;

  struct sample {
    clock_type::time_point at;
    std::size_t length;
    std::uint64_t worker; ///< Its registration order (`worker_entry::seq`): one per worker.
  };

  struct state {
    length_ranges ranges{initial_span}; ///< One per worker serving the model.
    std::deque<sample> window;          ///< Requests of the last interval, oldest first.
    /// Prompt bytes per worker (by registration order) in the window; none kept at 0, so a
    /// worker that left is forgotten once its requests leave the window.
    std::unordered_map<std::uint64_t, std::size_t> bytes;
    std::size_t share = 0; ///< Bytes per worker when the ranges were last fitted.
    clock_type::time_point last_adjust;
    bool stale = true; ///< The ranges may not follow the fleet: compare with the candidates.
  };

  /// The state of `model`, its ranges brought up to date with the fleet: `cands`, every
  /// worker of the model (the index's list, routable or not, in registration order). The
  /// fleet changes reach it through `on_fleet`; a full comparison (O(W)) only when the state
  /// is new, the change was not known, or the counts disagree (a worker of another provider).
  state& model_state(const std::string& model, const std::vector<const worker_entry*>& cands,
                     clock_type::time_point now) {
    auto& b = states_[model];
    if (!b.stale && b.ranges.size() == cands.size()) {
      return b;
    }
    b.stale = false;
    if (b.ranges.empty()) {
      // First sight: even slices, in registration order.
      std::vector<length_ranges::owner> owners;
      owners.reserve(cands.size());
      for (auto* w : cands) {
        owners.push_back({w->id, w->seq});
      }
      b.ranges.reset(owners);
      b.share = 0;
      b.last_adjust = now;
      return b;
    }
    // The same moves as on_fleet's, from a comparison: who left, then who came.
    std::unordered_set<std::string_view> listed;
    for (auto* w : cands) {
      listed.insert(w->id);
    }
    std::vector<std::string> gone;
    for (auto& r : b.ranges.list()) {
      if (listed.count(r.who->id) == 0) {
        gone.push_back(r.who->id);
      }
    }
    for (auto& id : gone) {
      b.ranges.remove(id);
    }
    for (auto* w : cands) {
      if (b.ranges.contains(w->id)) {
        b.ranges.renumber(w->id, w->seq);
      } else {
        b.ranges.add({w->id, w->seq});
      }
    }
    return b;
  }

  void expire(state& b, clock_type::time_point now) {
    while (!b.window.empty() && now - b.window.front().at > cfg_.bucket_adjust_interval) {
      auto& s = b.window.front();
      if (auto it = b.bytes.find(s.worker); it != b.bytes.end()) {
        it->second -= std::min(it->second, s.length);
        if (it->second == 0) {
          b.bytes.erase(it);
        }
      }
      b.window.pop_front();
    }
  }

  /// Fits the ranges to the window: cut the sorted lengths where each member's share of the
  /// bytes is reached. Kept as they are while the share is within 2x of the last fit.
  void adjust(state& b) {
    const auto n = b.ranges.size();
    if (b.window.empty() || n == 0) {
      return;
    }
    std::vector<std::size_t> lengths;
    std::size_t total = 0;
    for (auto& s : b.window) {
      lengths.push_back(s.length);
      total += s.length;
    }
    const auto share = total / n;
    if (b.share != 0 && share <= 2 * b.share && b.share <= 2 * share) {
      return;
    }
    b.share = share;
    std::sort(lengths.begin(), lengths.end());
    std::vector<std::size_t> upper;
    std::size_t sum = 0;
    std::size_t floor = 0; // ranges stay strictly increasing
    auto it = lengths.begin();
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const auto target = (i + 1) * std::max<std::size_t>(share, 1);
      while (it != lengths.end() && sum < target) {
        sum += *it++;
      }
      const auto cut = std::max(it == lengths.begin() ? 0 : *(it - 1), floor);
      upper.push_back(cut);
      floor = cut + 1;
    }
    b.ranges.refit(upper);
  }

  /// smg's imbalance test on the prompt bytes the eligible candidates (a sample of a large
  /// group) took in the window: the one that took fewest (the first of equals: in list order
  /// for a small group, a random one of a large group's draws), or npos when they are balanced.
  /// One lookup per candidate looked at.
  std::size_t imbalanced_pick(const state& b, const std::vector<const worker_entry*>& cands) const {
    if (sample_.size() < 2) {
      return npos;
    }
    std::size_t lo = npos;
    std::size_t lo_bytes = 0;
    std::size_t hi_bytes = 0;
    for (auto i : sample_) {
      auto it = b.bytes.find(cands[i]->seq);
      const auto taken = it == b.bytes.end() ? std::size_t{0} : it->second;
      if (lo == npos || taken < lo_bytes) {
        lo = i;
        lo_bytes = taken;
      }
      hi_bytes = std::max(hi_bytes, taken);
    }
    const auto diff = hi_bytes - lo_bytes;
    const bool imbalanced =
        diff > cfg_.balance_abs_threshold &&
        static_cast<double>(hi_bytes) > cfg_.balance_rel_threshold * static_cast<double>(lo_bytes);
    return imbalanced ? lo : npos;
  }

  /// The candidate whose range holds `length`; when its worker cannot take the request, the
  /// candidate of the nearest range.
  std::size_t range_pick(const state& b, const std::vector<const worker_entry*>& cands,
                         const selection& sel, std::size_t length) {
    std::size_t found = npos;
    b.ranges.nearest(length, [&](const length_ranges::owner& o) {
      auto i = position_of(cands, o.seq, o.id);
      if (i != npos && eligible(*cands[i], sel)) {
        found = i;
        return true;
      }
      return false;
    });
    return found != npos ? found : sample_.front(); // (ranges not knowing a candidate yet)
  }

  policy_config cfg_;
  clock_fn now_;
  std::vector<std::size_t> sample_; ///< Scratch: eligible candidates looked at.
  pick_rng rng_ = pick_rng::seeded();
  std::unordered_map<std::string, state> states_; ///< By model.
  std::string joined_;
  std::uint64_t by_range_ = 0;
  std::uint64_t balanced_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_bucket(const policy_config& cfg, clock_fn now) {
  return std::make_unique<bucket>(cfg, std::move(now));
}

} // namespace troupe::actors
