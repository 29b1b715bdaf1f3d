#include "actors/policies/candidate_ring.hpp"

namespace troupe::actors {

void candidate_ring::on_fleet(const fleet_snapshot& fleet, protocol::worker_type role) {
  std::vector<std::string> urls;
  for (auto& w : fleet.workers) {
    if (w->spec.type == role) {
      urls.push_back(w->spec.url);
    }
  }
  if (urls != urls_) { // else a change elsewhere in the fleet: the ring stays as it is
    urls_ = std::move(urls);
    ring_.assign(urls_);
    member_of_.clear();
    for (std::size_t m = 0; m < urls_.size(); ++m) {
      member_of_.emplace(urls_[m], m);
    }
  }
  // Candidates are entries of this snapshot: picks find their members by address.
  by_entry_.clear();
  for (auto& w : fleet.workers) {
    if (auto it = member_of_.find(w->spec.url); w->spec.type == role && it != member_of_.end()) {
      by_entry_.emplace(w.get(), it->second);
    }
  }
}

std::size_t candidate_ring::member(const worker_entry& w) const {
  if (auto it = by_entry_.find(&w); it != by_entry_.end()) {
    return it->second;
  }
  auto it = member_of_.find(w.spec.url);
  return it != member_of_.end() ? it->second : npos;
}

std::size_t candidate_ring::find(std::string_view key,
                                 const std::vector<const worker_entry*>& cands) {
  if (ring_.members() == 0) {
    return npos;
  }
  eligible_.assign(ring_.members(), 0);
  candidate_.resize(ring_.members());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    auto m = member(*cands[i]);
    if (m != npos) {
      eligible_[m] = 1;
      candidate_[m] = i;
    }
  }
  auto m = ring_.find(key, eligible_);
  return m == npos ? npos : candidate_[m];
}

} // namespace troupe::actors
