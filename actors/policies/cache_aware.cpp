#include "actors/policies/cache_score.hpp"
#include "actors/policies/candidate_positions.hpp"
#include "actors/policies/prompt_text.hpp"
#include "actors/policies/radix_tree.hpp"
#include "actors/policies/shared_prefix_view.hpp"
#include "actors/policies/strategy.hpp"
#include "actors/policies/tenant_map.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>

namespace troupe::actors {

namespace {

/// The cache-aware policy over one shared radix tree of the prompts each worker was sent
/// (docs/policies.md). In `score` mode (the default) each candidate looked at is scored by the
/// prefix it holds against the requests queued at it (`cache_score.hpp`): the tree says what
/// each worker holds, the score decides. In `smg` mode, while the load is balanced, a request
/// follows the worker holding the longest prefix of its prompt when that covers at least
/// `cache_threshold` of it, else goes to the worker holding the least text (the most cache
/// room); when the load is imbalanced it goes to the least loaded worker. Either way its prompt
/// is remembered for the chosen worker. The candidates looked at are every eligible one of a
/// small group, a random sample of a large one, plus (score mode) the holders of the longest
/// match: a pick costs the same with 4 workers or 4,000. In a cluster a shared prefix view
/// (`shared_prefix_view.hpp`) adds, in both modes, what the other nodes sent each worker: a
/// match is the longer of the tree's and the view's, a worker's text the larger, and the
/// holders of the view's longest match are looked at too.
class cache_aware final : public strategy {
public:
  explicit cache_aware(const policy_config& cfg)
      : cfg_(cfg), scored_(cfg.cache_aware_mode != "smg") {
    if (cfg.prefix_block_bytes > 0) {
      view_.emplace(shared_prefix_view::settings{cfg.prefix_block_bytes,
                                                 cfg.prefix_max_blocks_per_worker,
                                                 cfg.prefix_max_blocks, cfg.prefix_max_pending});
    }
  }

  std::string_view name() const noexcept override { return "cache_aware"; }

  std::size_t pick(const std::vector<const worker_entry*>& cands, const selection& sel) override {
    auto text = prompt_text(sel.prompt, joined_);
    // The candidates looked at: every eligible one of a small list; a random sample of a
    // large one (the power of `sample_size` choices), so a pick costs the same with 4 workers
    // or 4,000. smg looks at every worker.
    eligible_sample(cands, sel, rng_, sample_);
    if (sample_.empty()) {
      return npos;
    }
    if (view_ && !text.empty()) {
      view_->hash(text);
    }
    std::size_t k;
    if (scored_ && !text.empty()) {
      k = scored_pick(cands, sel, text);
    } else if (scored_) {
      k = least_loaded(cands);
      ++no_prompt_;
    } else if (imbalanced(cands)) {
      k = least_loaded(cands);
      ++imbalanced_;
    } else if (text.empty()) {
      // Nothing to be cached (a bodiless route): the tree cannot help, and "most cache room"
      // would send every such request to the same worker.
      k = least_loaded(cands);
      ++no_prompt_;
    } else {
      auto ok = accepted(cands, sel);
      auto matched = tree_.match(text, ok, holders_, sample_size);
      if (view_) {
        // The cluster's picks: what other nodes sent to these workers.
        matched = view_->widen(matched, ok, holders_, sample_size);
      }
      auto ratio = static_cast<double>(matched) / static_cast<double>(text.size());
      if (matched > 0 && ratio >= cfg_.cache_threshold && (k = best_holder(cands)) != npos) {
        ++cache_hits_;
      } else {
        k = most_room(cands);
        ++cache_misses_;
      }
    }
    if (!text.empty()) {
      auto t = tenant_for(*cands[k]);
      tree_.insert(text, t, cfg_.max_tree_size);
      if (view_) {
        view_->record(t, cands[k]->id);
      }
    }
    return k;
  }

  bool take_prefixes(prefix_drain& out, bool fresh_only) override {
    if (!view_) {
      return false;
    }
    view_->take(out, fresh_only);
    return true;
  }

  bool prefixes_fresh() const override { return view_ && view_->has_fresh(); }

  void merge_prefixes(const protocol::prefix_update& update) override {
    if (!view_) {
      return;
    }
    view_->merge(update, [this](const std::string& id) -> const radix_tree::tenant* {
      return tenants_.find(id);
    });
  }

  void on_fleet(const fleet_snapshot& fleet, const fleet_change* change,
                protocol::worker_type role) override {
    // O(workers that came or went) by the snapshot's change; a worker that left takes its
    // cache with it.
    tenants_.on_fleet(fleet, change, role, [this](radix_tree::tenant t, const std::string& id) {
      tree_.remove(t);
      if (view_) {
        view_->remove(t, id);
      }
    });
  }

  nlohmann::json describe() const override {
    auto trees = nlohmann::json::object();
    tenants_.each([&](const std::string& id, radix_tree::tenant t) { trees[id] = tree_.size(t); });
    nlohmann::json j = {{"mode", scored_ ? "score" : "smg"},
                        {"load_weight", cfg_.cache_aware_load_weight},
                        {"mean_prompt_bytes", mean_prompt_},
                        {"cache_threshold", cfg_.cache_threshold},
                        {"balance_abs_threshold", cfg_.balance_abs_threshold},
                        {"balance_rel_threshold", cfg_.balance_rel_threshold},
                        {"max_tree_size", cfg_.max_tree_size},
                        {"eviction_interval_secs", cfg_.eviction_interval.count()},
                        {"tree_bytes", std::move(trees)},
                        {"tree_nodes", tree_.node_count()},
                        {"tenant_rebuilds", tenants_.rebuilds()},
                        {"picks",
                         {{"cache_hit", cache_hits_},
                          {"most_room", cache_misses_},
                          {"imbalanced", imbalanced_},
                          {"no_prompt", no_prompt_},
                          {"spilled", spilled_}}}};
    if (view_) {
      j["shared_view"] = view_->describe();
    }
    return j;
  }

private:
  /// Tenants the tree may match: those of eligible candidates of this pick (the group's list).
  std::function<bool(radix_tree::tenant)> accepted(const std::vector<const worker_entry*>& cands,
                                                   const selection& sel) {
    return [this, &cands, &sel](radix_tree::tenant t) {
      auto* w = tenants_.entry(t);
      return w && eligible(*w, sel) && position(cands, w) != npos;
    };
  }

  /// `score` mode: what each candidate looked at holds of `text`, weighed against its queue.
  /// Looked at: the sample, and the holders of the longest match among all the eligible
  /// candidates (a sample of a large group would miss them).
  std::size_t scored_pick(const std::vector<const worker_entry*>& cands, const selection& sel,
                          std::string_view text) {
    auto ok = accepted(cands, sel);
    tree_.match(text, ok, holders_, sample_size);
    if (view_) {
      // The holders of the view's longest match (other nodes' picks) are looked at too.
      view_->add_holders(ok, holders_, 2 * sample_size);
    }
    scored_index_ = sample_;
    for (auto t : holders_) {
      if (auto k = position(cands, tenants_.entry(t)); k != npos) {
        scored_index_.push_back(k);
      }
    }
    // In candidate order, so ties go to the first candidate, as in a scan of the list.
    std::sort(scored_index_.begin(), scored_index_.end());
    scored_index_.erase(std::unique(scored_index_.begin(), scored_index_.end()),
                        scored_index_.end());
    for (auto i : scored_index_) {
      auto t = tenant_for(*cands[i]);
      if (scoring_.size() <= t) {
        scoring_.resize(tenants_.capacity(), 0);
        lengths_.resize(tenants_.capacity(), 0);
      }
      scoring_[t] = 1;
    }
    tree_.match_each(
        text, [&](radix_tree::tenant t) { return t < scoring_.size() && scoring_[t]; },
        [&](radix_tree::tenant t, std::size_t length) { lengths_[t] = length; });
    if (view_) {
      // The cluster's picks: what other nodes sent to these workers, at block granularity.
      view_->match_each([&](radix_tree::tenant t) { return t < scoring_.size() && scoring_[t]; },
                        [&](radix_tree::tenant t, std::size_t bytes) {
                          lengths_[t] = std::max(lengths_[t], bytes);
                        });
    }
    scored_cands_.clear();
    // A match below `cache_threshold` of the prompt (the JSON head every chat shares, a short
    // common line) saves too little to be worth following: it counts as none, so such prompts
    // go to the least loaded worker, then to the one with the most room, as in smg's mode.
    const auto worth = static_cast<double>(text.size()) * cfg_.cache_threshold;
    std::size_t longest = 0;
    for (auto i : scored_index_) {
      auto t = tenant_for(*cands[i]);
      auto matched = lengths_[t];
      scoring_[t] = 0; // all 0 again between picks
      lengths_[t] = 0;
      if (matched == 0 || static_cast<double>(matched) < worth) {
        matched = 0;
      }
      longest = std::max(longest, matched);
      scored_cands_.push_back({matched, cands[i]->live->load(), held(t)});
    }
    // The running mean prompt: what one request queued at a worker is taken to cost.
    const auto bytes = static_cast<double>(text.size());
    mean_prompt_ = mean_prompt_ == 0 ? bytes : mean_prompt_ + (bytes - mean_prompt_) / 64;
    auto best = view_ && longest == 0
                    ? first_sight(cands)
                    : best_by_score(scored_cands_, mean_prompt_, cfg_.cache_aware_load_weight);
    const auto matched = scored_cands_[best].matched;
    if (matched == 0) {
      ++cache_misses_;
    } else {
      ++cache_hits_;
    }
    if (matched < longest) {
      ++spilled_; // affinity given up for a shorter queue: the prefix gains a holder
    }
    return scored_index_[best];
  }

  /// `score` mode with a shared view, for a prompt no candidate looked at holds enough of: the
  /// worker every node would choose, so that nodes meeting a new prefix at once (before they
  /// hear of each other's picks) place it on one worker. Of the scored candidates within one
  /// request of the least loaded (nodes see each other's loads a gossip tick late), the one
  /// holding the least text, then the one the prompt ranks first. Returns an index into
  /// `scored_index_` (and `scored_cands_`). In a group larger than the sample, nodes draw
  /// different samples and agree less.
  std::size_t first_sight(const std::vector<const worker_entry*>& cands) const {
    std::size_t lo = SIZE_MAX;
    for (auto i : scored_index_) {
      lo = std::min(lo, load(cands, i));
    }
    std::size_t k = npos;
    std::pair<std::size_t, std::uint64_t> kb{};
    for (std::size_t j = 0; j < scored_index_.size(); ++j) {
      auto i = scored_index_[j];
      if (load(cands, i) > lo + 1) {
        continue;
      }
      std::pair b{scored_cands_[j].tree_bytes, view_->rank(cands[i]->id)};
      if (k == npos || b < kb) {
        k = j;
        kb = b;
      }
    }
    return k;
  }

  /// The tenant of candidate `w`.
  radix_tree::tenant tenant_for(const worker_entry& w) { return tenants_.of(w); }

  std::size_t position(const std::vector<const worker_entry*>& cands, const worker_entry* w) {
    return position_of(cands, w);
  }

  /// smg's test, over the sample: the busiest candidate has more than
  /// `balance_abs_threshold` requests in flight above the idlest and more than
  /// `balance_rel_threshold` times its load.
  bool imbalanced(const std::vector<const worker_entry*>& cands) const {
    int lo = cands[sample_.front()]->live->load();
    int hi = lo;
    for (auto i : sample_) {
      auto l = cands[i]->live->load();
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
    return static_cast<std::size_t>(hi - lo) > cfg_.balance_abs_threshold &&
           static_cast<double>(hi) > cfg_.balance_rel_threshold * static_cast<double>(lo);
  }

  std::size_t load(const std::vector<const worker_entry*>& cands, std::size_t i) const {
    return static_cast<std::size_t>(std::max(0, cands[i]->live->load()));
  }

  /// Bytes of prompt text tenant `t` holds: per the tree (this node's prompts), or per the
  /// shared view (the cluster's, at block granularity) when that knows more.
  std::size_t held(radix_tree::tenant t) const {
    return view_ ? std::max(tree_.size(t), view_->bytes(t)) : tree_.size(t);
  }

  std::size_t held(const std::vector<const worker_entry*>& cands, std::size_t i) const {
    auto* t = tenants_.find(*cands[i]);
    return t ? held(*t) : 0;
  }

  /// The first of `among` minimizing (`primary`, `secondary`).
  template <class Primary, class Secondary>
  std::size_t best(const std::vector<std::size_t>& among, Primary primary,
                   Secondary secondary) const {
    std::size_t k = npos;
    for (auto i : among) {
      if (k == npos || std::pair{primary(i), secondary(i)} < std::pair{primary(k), secondary(k)}) {
        k = i;
      }
    }
    return k;
  }

  std::size_t least_loaded(const std::vector<const worker_entry*>& cands) const {
    return best(
        sample_, [&](std::size_t i) { return load(cands, i); },
        [&](std::size_t i) { return held(cands, i); });
  }

  /// Of the candidates holding the longest match, the least loaded (smg takes any of them).
  std::size_t best_holder(const std::vector<const worker_entry*>& cands) {
    holder_index_.clear();
    for (auto t : holders_) {
      if (auto k = position(cands, tenants_.entry(t)); k != npos) {
        holder_index_.push_back(k);
      }
    }
    // In candidate order, so ties go to the first candidate, as in a scan of the list.
    std::sort(holder_index_.begin(), holder_index_.end());
    if (view_) {
      // Nodes see loads at different moments: by load, each would spread a prefix two workers
      // hold (two nodes placed it at once) over both, keeping both copies hot. By rank, every
      // node prefers the same holder and the other copy ages out of its cache.
      return best(
          holder_index_, [&](std::size_t i) { return view_->rank(cands[i]->id); },
          [&](std::size_t i) { return load(cands, i); });
    }
    return best(
        holder_index_, [&](std::size_t i) { return load(cands, i); },
        [&](std::size_t i) { return held(cands, i); });
  }

  /// With a shared view, ties go by the prompt's rank of each worker rather than by load (which
  /// nodes see at different moments): nodes that meet a new prefix together agree on it.
  std::size_t most_room(const std::vector<const worker_entry*>& cands) const {
    return best(
        sample_, [&](std::size_t i) { return held(cands, i); },
        [&](std::size_t i) {
          return view_ ? view_->rank(cands[i]->id) : static_cast<std::uint64_t>(load(cands, i));
        });
  }

  policy_config cfg_;
  radix_tree tree_;
  std::optional<shared_prefix_view> view_;  ///< In a cluster: what every node sent where.
  tenant_map tenants_;                      ///< The tree's tenant of each worker, and back.
  std::vector<radix_tree::tenant> holders_; ///< Scratch: tenants holding the longest match.
  std::vector<std::size_t> holder_index_;   ///< Scratch: their candidate indices.
  std::vector<std::size_t> sample_;         ///< Scratch: the candidates looked at.
  std::mt19937_64 rng_{std::random_device{}()};
  std::string joined_;                        ///< Scratch: a two-part prompt, joined.
  bool scored_;                               ///< `score` mode, else smg's.
  double mean_prompt_ = 0;                    ///< Running mean of the prompt bytes picked for.
  std::vector<std::size_t> scored_index_;     ///< Scratch: the candidates scored.
  std::vector<char> scoring_;                 ///< By tenant: scored in this pick; all 0 between.
  std::vector<std::size_t> lengths_;          ///< By tenant: matched bytes; all 0 between picks.
  std::vector<cache_candidate> scored_cands_; ///< Scratch: the score's view of the candidates.
  std::uint64_t spilled_ = 0;
  std::uint64_t cache_hits_ = 0;
  std::uint64_t cache_misses_ = 0;
  std::uint64_t imbalanced_ = 0;
  std::uint64_t no_prompt_ = 0;
};

} // namespace

std::unique_ptr<strategy> make_cache_aware(const policy_config& cfg) {
  return std::make_unique<cache_aware>(cfg);
}

} // namespace troupe::actors
