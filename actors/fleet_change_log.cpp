#include "actors/fleet_change_log.hpp"

namespace troupe::actors {

void fleet_change_log::added(const worker_entry& w) {
  if (added_.insert(&w).second) {
    added_order_.push_back(&w);
  }
}

void fleet_change_log::removed(const worker_entry& w) {
  if (added_.erase(&w) != 0) {
    // Came and went since the last notification: the listeners never saw it. Its address
    // leaves the order list too, or a new entry given the same address would be a duplicate.
    std::erase(added_order_, &w);
    return;
  }
  removed_.push_back({&w, w.id, w.spec.url, w.spec.type});
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
