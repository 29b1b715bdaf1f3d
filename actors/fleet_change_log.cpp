#include "actors/fleet_change_log.hpp"

namespace troupe::actors {

void fleet_change_log::added(const worker_entry& w) {
  if (added_.insert(&w).second) {
    added_order_.push_back(&w);
  }
}

void fleet_change_log::removed(const fleet_change::gone& g) {
  if (added_.erase(g.entry) != 0) {
    // Came and went since the last notification: the listeners never saw it. Its address
    // leaves the order list too, or a new entry given the same address would be a duplicate.
    std::erase(added_order_, g.entry);
    return;
  }
  removed_.push_back(g);
}

void fleet_change_log::merge(const fleet_change& next) {
  // Removed first: an address in both lists is an entry that went and a new one given its
  // address (fleet_change's order).
  for (auto& g : next.removed) {
    removed(g);
  }
  for (auto* w : next.added) {
    added(*w);
  }
}

std::shared_ptr<const fleet_change> fleet_change_log::change() const {
  if (lost_) {
    return nullptr;
  }
  auto c = std::make_shared<fleet_change>();
  c->from = from_;
  c->added = added_order_;
  c->removed = removed_;
  return c;
}

void fleet_change_log::notified(std::uint64_t version) {
  from_ = version;
  lost_ = false;
  added_order_.clear();
  added_.clear();
  removed_.clear();
}

} // namespace troupe::actors
