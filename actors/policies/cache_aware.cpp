#include "actors/policies/cache_score.hpp"
#include "actors/policies/candidate_positions.hpp"
#include "actors/policies/prompt_text.hpp"
#include "actors/policies/radix_tree.hpp"
#include "actors/policies/shared_prefix_view.hpp"
#include "actors/policies/strategy.hpp"
#include "actors/policies/tenant_map.hpp"
#include "protocol/placement_wire.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
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
/// holders of the view's longest match are looked at too. With placement by owner
/// (docs/cluster.md) a pick may be placed by the node owning its prompt's prefix group
/// (`placement_query`, `place`), and this node decides the picks of the groups it owns for the
/// others (`decide`), counting each worker it chose for another node as one more request in
/// flight there until that node's load report can cover it. In a cluster, `score` mode doubts
/// up to `cache_aware_stale_margin` of the requests other nodes reported at a holder of the
/// longest match (`best_by_score`): reports are a gossip interval old.
class cache_aware final : public strategy {
public:
  cache_aware(const policy_config& cfg, clock_fn now)
      : cfg_(cfg), scored_(cfg.cache_aware_mode != "smg"), now_(std::move(now)) {
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
    // large one (the power of `cache_aware_sample` choices), so a pick costs the same with 4
    // workers or 4,000. smg looks at every worker.
    eligible_sample(cands, sel, rng_, sample_, cfg_.cache_aware_sample);
    if (sample_.empty()) {
      return npos;
    }
    for (auto i : sample_) {
      tenants_.prefetch(*cands[i]); // read by every mode below; cold in a large fleet
    }
    if (view_ && !text.empty()) {
      view_->hash(text);
    }
    expire_reservations();
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
      auto matched = tree_.match(text, ok, holders_, cfg_.cache_aware_sample);
      if (view_) {
        // The cluster's picks: what other nodes sent to these workers.
        matched = view_->widen(matched, ok, holders_, cfg_.cache_aware_sample);
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

  bool placement_query(const std::vector<const worker_entry*>& cands, const selection& sel,
                       bool every, protocol::placement_ask& ask) override {
    if (!view_) {
      return false;
    }
    auto text = prompt_text(sel.prompt, joined_);
    if (text.empty()) {
      return false;
    }
    eligible_sample(cands, sel, rng_, sample_, cfg_.cache_aware_sample);
    if (sample_.empty()) {
      return false;
    }
    view_->hash(text);
    auto ok = accepted(cands, sel);
    auto matched = tree_.match(text, ok, holders_, cfg_.cache_aware_sample);
    matched = view_->widen(matched, ok, holders_, cfg_.cache_aware_sample);
    const auto worth = static_cast<double>(text.size()) * cfg_.cache_threshold;
    if (!every && matched > 0 && static_cast<double>(matched) >= worth) {
      return false; // a worker holds enough of it: this node's pick follows it
    }
    ++placement_asked_;
    ask.block_bytes = static_cast<std::uint32_t>(view_->block_bytes());
    ask.head = view_->head();
    ask.prompt_bytes = text.size();
    auto& chain = view_->chain();
    ask.chain.assign(chain.begin(),
                     chain.begin() + static_cast<std::ptrdiff_t>(
                                         std::min(chain.size(), protocol::placement_max_chain)));
    ask.candidates.clear();
    collect_scored(cands);
    for (auto i : scored_index_) {
      ask.candidates.push_back(cands[i]->id);
    }
    return true;
  }

  std::size_t place(const std::vector<const worker_entry*>& cands, const selection& sel,
                    std::string_view worker) override {
    auto* t = view_ ? tenants_.find(worker) : nullptr;
    auto k = t ? position(cands, tenants_.entry(*t)) : npos;
    if (k == npos || !eligible(*cands[k], sel)) {
      ++placement_refused_; // left, or not this pick's to take any more: decided here
      return npos;
    }
    auto text = prompt_text(sel.prompt, joined_);
    if (!text.empty()) {
      view_->hash(text);
      tree_.insert(text, *t, cfg_.max_tree_size);
      view_->record(*t, cands[k]->id);
    }
    ++placement_placed_;
    return k;
  }

  std::string decide(const protocol::placement_ask& ask) override {
    if (!view_ || ask.block_bytes != view_->block_bytes()) {
      return {};
    }
    expire_reservations();
    view_->use(ask.chain, ask.head);
    owned_.clear();
    for (auto& id : ask.candidates) {
      auto* t = tenants_.find(id);
      auto* w = t ? tenants_.entry(*t) : nullptr;
      if (!w || !w->live->routable()) {
        continue; // not known here (yet), or down as this node sees it
      }
      if (scoring_.size() <= *t) {
        scoring_.resize(tenants_.capacity(), 0);
        lengths_.resize(tenants_.capacity(), 0);
      }
      if (!scoring_[*t]) {
        scoring_[*t] = 1;
        owned_.push_back({*t, w});
      }
    }
    if (owned_.empty()) {
      return {};
    }
    view_->match_each([&](radix_tree::tenant t) { return t < scoring_.size() && scoring_[t]; },
                      [&](radix_tree::tenant t, std::size_t bytes) { lengths_[t] = bytes; });
    const auto bytes = static_cast<double>(ask.prompt_bytes);
    const auto worth = bytes * cfg_.cache_threshold;
    std::size_t longest = 0;
    scored_cands_.clear();
    for (auto& [t, w] : owned_) {
      auto matched = take_match(t, worth);
      longest = std::max(longest, matched);
      scored_cands_.push_back(
          {matched, w->live->load() + reserved(t), held(t), w->live->remote_load()});
    }
    auto rank_of = [&](std::size_t j) { return view_->rank(owned_[j].second->id); };
    std::size_t j;
    if (scored_) {
      if (bytes > 0) {
        mean_prompt_ = mean_prompt_ == 0 ? bytes : mean_prompt_ + (bytes - mean_prompt_) / 64;
      }
      j = longest == 0 ? first_sight_of(rank_of)
                       : best_by_score(scored_cands_, mean_prompt_, cfg_.cache_aware_load_weight,
                                       cfg_.cache_aware_stale_margin);
    } else {
      j = smg_choice(longest, rank_of);
    }
    auto [t, w] = owned_[j];
    view_->record(t, w->id);
    reserve(t);
    ++placement_decided_;
    return w->id;
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
                        {"stale_margin", cfg_.cache_aware_stale_margin},
                        {"sample", cfg_.cache_aware_sample},
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
                          {"spilled", spilled_}}},
                        {"placement",
                         {{"asked", placement_asked_},
                          {"placed", placement_placed_},
                          {"refused", placement_refused_},
                          {"decided", placement_decided_},
                          {"reserved", reservations_.size()}}}};
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

  /// Tenant `t`'s matched length gathered into `lengths_` by a match, as a score counts it (a
  /// match below `worth`, the cache threshold's share of the prompt, counts as none); clears
  /// its marks, so `scoring_` and `lengths_` are all 0 again between picks.
  std::size_t take_match(radix_tree::tenant t, double worth) {
    auto matched = lengths_[t];
    scoring_[t] = 0;
    lengths_[t] = 0;
    return matched == 0 || static_cast<double>(matched) < worth ? 0 : matched;
  }

  /// `scored_index_`: the sampled candidates and the candidates among `holders_`, as positions
  /// in `cands`, each once, in candidate order (so ties go to the first candidate, as in a scan
  /// of the list).
  void collect_scored(const std::vector<const worker_entry*>& cands) {
    scored_index_ = sample_;
    for (auto t : holders_) {
      if (auto k = position(cands, tenants_.entry(t)); k != npos) {
        scored_index_.push_back(k);
        tenants_.prefetch(*cands[k]); // the sample's were prefetched by `pick`
      }
    }
    std::sort(scored_index_.begin(), scored_index_.end());
    scored_index_.erase(std::unique(scored_index_.begin(), scored_index_.end()),
                        scored_index_.end());
  }

  /// `score` mode: what each candidate looked at holds of `text`, weighed against its queue.
  /// Looked at: the sample, and the holders of the longest match among all the eligible
  /// candidates (a sample of a large group would miss them).
  std::size_t scored_pick(const std::vector<const worker_entry*>& cands, const selection& sel,
                          std::string_view text) {
    auto ok = accepted(cands, sel);
    tree_.match(text, ok, holders_, cfg_.cache_aware_sample);
    if (view_) {
      // The holders of the view's longest match (other nodes' picks) are looked at too.
      view_->add_holders(ok, holders_, 2 * cfg_.cache_aware_sample);
    }
    collect_scored(cands);
    scored_tenants_.clear();
    for (auto i : scored_index_) {
      auto t = tenant_for(*cands[i]);
      if (scoring_.size() <= t) {
        scoring_.resize(tenants_.capacity(), 0);
        lengths_.resize(tenants_.capacity(), 0);
      }
      scoring_[t] = 1;
      scored_tenants_.push_back(t);
    }
    // By the scored tenants, not by the marks on the path: a prefix all 4,000 workers hold
    // carries 4,000 marks.
    tree_.match_each(text, scored_tenants_,
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
    for (std::size_t j = 0; j < scored_index_.size(); ++j) {
      auto i = scored_index_[j];
      auto t = scored_tenants_[j];
      auto matched = take_match(t, worth);
      longest = std::max(longest, matched);
      scored_cands_.push_back(
          {matched, cands[i]->live->load() + reserved(t), held(t), cands[i]->live->remote_load()});
    }
    // The running mean prompt: what one request queued at a worker is taken to cost.
    const auto bytes = static_cast<double>(text.size());
    mean_prompt_ = mean_prompt_ == 0 ? bytes : mean_prompt_ + (bytes - mean_prompt_) / 64;
    auto best = view_ && longest == 0
                    ? first_sight(cands)
                    : best_by_score(scored_cands_, mean_prompt_, cfg_.cache_aware_load_weight,
                                    cfg_.cache_aware_stale_margin);
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
    return first_sight_of([&](std::size_t j) { return view_->rank(cands[scored_index_[j]]->id); });
  }

  /// The rule of `first_sight` over `scored_cands_`, `rank_of(j)` the rank of the j-th.
  template <class Rank> std::size_t first_sight_of(Rank rank_of) const {
    auto load_of = [&](std::size_t j) {
      return static_cast<std::size_t>(std::max(0, scored_cands_[j].load));
    };
    std::size_t lo = SIZE_MAX;
    for (std::size_t j = 0; j < scored_cands_.size(); ++j) {
      lo = std::min(lo, load_of(j));
    }
    std::size_t k = npos;
    std::pair<std::size_t, std::uint64_t> kb{};
    for (std::size_t j = 0; j < scored_cands_.size(); ++j) {
      if (load_of(j) > lo + 1) {
        continue;
      }
      std::pair b{scored_cands_[j].tree_bytes, rank_of(j)};
      if (k == npos || b < kb) {
        k = j;
        kb = b;
      }
    }
    return k;
  }

  /// `smg` mode as the owner, over `scored_cands_` (`longest` the longest match kept): the
  /// holder of the longest match the prompt ranks first when it covers `cache_threshold` of the
  /// prompt; else, when the load is imbalanced, the least loaded; else the most room, then rank.
  template <class Rank> std::size_t smg_choice(std::size_t longest, Rank rank_of) const {
    auto& c = scored_cands_;
    std::size_t k = 0;
    auto better = [&](std::size_t j, auto key) { return key(j) < key(k); };
    if (longest > 0) {
      k = npos;
      for (std::size_t j = 0; j < c.size(); ++j) {
        if (c[j].matched == longest &&
            (k == npos || std::pair{rank_of(j), c[j].load} < std::pair{rank_of(k), c[k].load})) {
          k = j;
        }
      }
      return k;
    }
    int lo = c.front().load;
    int hi = lo;
    for (auto& x : c) {
      lo = std::min(lo, x.load);
      hi = std::max(hi, x.load);
    }
    bool imbalanced =
        static_cast<std::size_t>(std::max(0, hi - lo)) > cfg_.balance_abs_threshold &&
        static_cast<double>(hi) > cfg_.balance_rel_threshold * static_cast<double>(lo);
    for (std::size_t j = 1; j < c.size(); ++j) {
      if (imbalanced ? better(j,
                              [&](std::size_t i) {
                                return std::pair{c[i].load, c[i].tree_bytes};
                              })
                     : better(j, [&](std::size_t i) {
                         return std::pair{c[i].tree_bytes, rank_of(i)};
                       })) {
        k = j;
      }
    }
    return k;
  }

  /// Requests this node counts at tenant `t` for the workers it chose for other nodes.
  int reserved(radix_tree::tenant t) const { return t < reserved_.size() ? reserved_[t] : 0; }

  void reserve(radix_tree::tenant t) {
    if (cfg_.placement_reserve.count() <= 0 || !now_) {
      return;
    }
    if (reserved_.size() <= t) {
      reserved_.resize(t + 1, 0);
    }
    ++reserved_[t];
    reservations_.push_back({now_() + cfg_.placement_reserve, t});
  }

  /// Reservations older than `placement_reserve` end: the asker's load report covers them now.
  void expire_reservations() {
    if (reservations_.empty()) {
      return;
    }
    auto now = now_();
    while (!reservations_.empty() && reservations_.front().until <= now) {
      auto t = reservations_.front().t;
      if (t < reserved_.size() && reserved_[t] > 0) {
        --reserved_[t];
      }
      reservations_.pop_front();
    }
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
    auto* t = reservations_.empty() ? nullptr : tenants_.find(*cands[i]);
    return static_cast<std::size_t>(std::max(0, cands[i]->live->load() + (t ? reserved(*t) : 0)));
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
  pick_rng rng_ = pick_rng::seeded();
  std::string joined_;                             ///< Scratch: a two-part prompt, joined.
  bool scored_;                                    ///< `score` mode, else smg's.
  double mean_prompt_ = 0;                         ///< Running mean of the prompt bytes picked for.
  std::vector<std::size_t> scored_index_;          ///< Scratch: the candidates scored.
  std::vector<radix_tree::tenant> scored_tenants_; ///< Scratch: their tenants.
  std::vector<char> scoring_;                 ///< By tenant: scored in this pick; all 0 between.
  std::vector<std::size_t> lengths_;          ///< By tenant: matched bytes; all 0 between picks.
  std::vector<cache_candidate> scored_cands_; ///< Scratch: the score's view of the candidates.
  std::uint64_t spilled_ = 0;
  std::uint64_t cache_hits_ = 0;
  std::uint64_t cache_misses_ = 0;
  std::uint64_t imbalanced_ = 0;
  std::uint64_t no_prompt_ = 0;
  clock_fn now_;
  /// A worker chosen for another node's pick, counted as in flight there until `until`.
  struct reservation {
    std::chrono::steady_clock::time_point until;
    radix_tree::tenant t;
  };
  std::deque<reservation> reservations_; ///< Oldest first.
  std::vector<int> reserved_;            ///< By tenant: reservations held.
  /// Scratch of `decide`: the asker's candidates known here.
  std::vector<std::pair<radix_tree::tenant, const worker_entry*>> owned_;
  std::uint64_t placement_asked_ = 0;   ///< Picks that asked the owner (or were the owner's).
  std::uint64_t placement_placed_ = 0;  ///< Picks placed on the owner's answer.
  std::uint64_t placement_refused_ = 0; ///< Answers that were no candidate any more.
  std::uint64_t placement_decided_ = 0; ///< Asks of other nodes this node decided as owner.
};

} // namespace

std::unique_ptr<strategy> make_cache_aware(const policy_config& cfg, clock_fn now) {
  if (!now) {
    now = [] { return std::chrono::steady_clock::now(); };
  }
  return std::make_unique<cache_aware>(cfg, std::move(now));
}

} // namespace troupe::actors
