#include "actors/policies/shared_prefix_view.hpp"

#include "actors/policies/prefix_blocks.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace troupe::actors {

namespace {

/// How much of a prompt's start seeds its rank of the workers.
constexpr std::size_t rank_bytes = 512;

std::uint64_t pair_key(prefix_index::tenant t, std::uint64_t hash) {
  return hash ^ (0x9e3779b97f4a7c15ull * (std::uint64_t{t} + 1));
}

} // namespace

shared_prefix_view::shared_prefix_view(const settings& s)
    : s_(s), index_(prefix_index::limits{s.max_blocks_per_worker, s.max_blocks}) {
  s_.block_bytes = std::max<std::size_t>(s_.block_bytes, 1);
}

void shared_prefix_view::hash(std::string_view text) {
  prefix_block_hashes(text, s_.block_bytes, chain_);
  // The rank's seed: the prompt's first `rank_bytes` (its whole blocks up to there), so that
  // requests sharing a system prompt rank workers alike while different prompts spread.
  auto n = std::min(chain_.size(), std::max<std::size_t>(1, rank_bytes / s_.block_bytes));
  head_ = n > 0 ? chain_[n - 1] : XXH3_64bits(text.data(), text.size());
}

void shared_prefix_view::use(const std::vector<std::uint64_t>& chain, std::uint64_t head) {
  chain_ = chain;
  head_ = head;
}

std::size_t shared_prefix_view::match_each(const std::function<bool(tenant)>& eligible,
                                           const std::function<void(tenant, std::size_t)>& held) {
  const auto bb = s_.block_bytes;
  return index_.match_each(chain_, eligible, [&](tenant t, std::size_t n) { held(t, n * bb); }) *
         bb;
}

std::size_t shared_prefix_view::widen(std::size_t matched,
                                      const std::function<bool(tenant)>& eligible,
                                      std::vector<tenant>& holders, std::size_t max_holders) {
  auto best = index_.match(chain_, eligible, scratch_, max_holders) * s_.block_bytes;
  if (best == 0 || best < matched) {
    return matched;
  }
  if (best > matched) {
    holders.clear();
  }
  join(holders, max_holders);
  return best;
}

std::size_t shared_prefix_view::add_holders(const std::function<bool(tenant)>& eligible,
                                            std::vector<tenant>& holders, std::size_t max_holders) {
  auto best = index_.match(chain_, eligible, scratch_, max_holders) * s_.block_bytes;
  join(holders, max_holders);
  return best;
}

void shared_prefix_view::join(std::vector<tenant>& holders, std::size_t max_holders) const {
  for (auto t : scratch_) {
    if (holders.size() >= max_holders) {
      break;
    }
    if (std::find(holders.begin(), holders.end(), t) == holders.end()) {
      holders.push_back(t);
    }
  }
}

void shared_prefix_view::record(tenant t, const std::string& id) {
  std::vector<std::uint64_t>* refresh = nullptr;
  std::vector<std::uint64_t>* fresh = nullptr;
  // Deepest block first: the prompt's first blocks end up most recently used, so eviction
  // takes a chain from its end, as an engine's cache does.
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    bool is_new = index_.touch(t, *it);
    if (!pending_seen_.insert(pair_key(t, *it)).second) {
      continue; // already going out this tick
    }
    if (pending_count_ >= s_.max_pending) {
      ++dropped_;
      continue;
    }
    auto*& out = is_new ? fresh : refresh;
    if (!out) {
      out = is_new ? &fresh_[id] : &pending_[id];
    }
    out->push_back(*it);
    ++pending_count_;
    fresh_count_ += is_new ? 1 : 0;
  }
}

void shared_prefix_view::merge(const protocol::prefix_update& u,
                               const std::function<const tenant*(const std::string&)>& tenant_of) {
  for (auto& w : u.workers) {
    auto* t = tenant_of(w.worker);
    if (!t) {
      unknown_ += w.hashes.size();
      continue;
    }
    for (auto h : w.hashes) {
      index_.touch(*t, h);
    }
    merged_ += w.hashes.size();
  }
}

void shared_prefix_view::take(prefix_drain& out, bool fresh_only) {
  out.update.block_bytes = static_cast<std::uint32_t>(s_.block_bytes);
  out.update.workers.clear();
  out.update.workers.reserve(fresh_.size() + (fresh_only ? 0 : pending_.size()));
  auto move_out = [&](std::unordered_map<std::string, std::vector<std::uint64_t>>& from) {
    for (auto& [id, hashes] : from) {
      recorded_ += hashes.size();
      pending_count_ -= hashes.size();
      out.update.workers.push_back({id, std::move(hashes)});
    }
    from.clear();
  };
  move_out(fresh_);
  fresh_count_ = 0;
  if (!fresh_only) {
    // A worker's refreshes and fresh blocks may go as two entries: receivers touch both.
    move_out(pending_);
    pending_seen_.clear(); // the next tick sends each (worker, block) a pick uses again
  }
  out.stats = stats();
}

void shared_prefix_view::remove(tenant t, const std::string& id) {
  index_.remove(t);
  for (auto* m : {&pending_, &fresh_}) {
    if (auto it = m->find(id); it != m->end()) {
      pending_count_ -= it->second.size();
      if (m == &fresh_) {
        fresh_count_ -= it->second.size();
      }
      m->erase(it);
    }
  }
}

std::uint64_t shared_prefix_view::rank(const std::string& id) const noexcept {
  return XXH3_64bits_withSeed(id.data(), id.size(), head_);
}

prefix_view_stats shared_prefix_view::stats() const {
  prefix_view_stats s;
  s.blocks = index_.size();
  s.distinct = index_.distinct();
  s.evicted = index_.evicted();
  s.merged = merged_;
  s.unknown = unknown_;
  s.dropped = dropped_;
  s.recorded = recorded_;
  s.block_bytes = s_.block_bytes;
  return s;
}

nlohmann::json shared_prefix_view::describe() const {
  auto s = stats();
  return {{"block_bytes", s.block_bytes},
          {"max_blocks_per_worker", index_.bounds().per_tenant},
          {"max_blocks", index_.bounds().total},
          {"blocks", s.blocks},
          {"distinct_blocks", s.distinct},
          {"evicted", s.evicted},
          {"merged", s.merged},
          {"unknown_worker", s.unknown},
          {"recorded", s.recorded},
          {"dropped", s.dropped},
          {"pending", pending_count_},
          {"fresh", fresh_count_}};
}

} // namespace troupe::actors
