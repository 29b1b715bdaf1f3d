#include "apps/troupe-sim/response_store.hpp"

namespace troupe::sim {

void response_store::put(const std::string& id, stored_response r) {
  auto [it, inserted] = items_.insert_or_assign(id, std::move(r));
  if (!inserted) {
    return;
  }
  order_.push_back(id);
  while (items_.size() > capacity_ && !order_.empty()) {
    items_.erase(order_.front());
    order_.pop_front();
  }
  // Ids erased by `erase` linger in `order_`; compact when they dominate.
  if (order_.size() > 2 * capacity_ + 16) {
    std::deque<std::string> live;
    for (auto& k : order_) {
      if (items_.count(k) != 0) {
        live.push_back(std::move(k));
      }
    }
    order_.swap(live);
  }
}

stored_response* response_store::find(const std::string& id) {
  auto it = items_.find(id);
  return it == items_.end() ? nullptr : &it->second;
}

bool response_store::erase(const std::string& id) {
  return items_.erase(id) != 0;
}

} // namespace troupe::sim
