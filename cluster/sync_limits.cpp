#include "cluster/sync_limits.hpp"

namespace troupe::cluster {

bool sync_limits::may_send(const std::string& member, clock::time_point now) const {
  return now >= next_send(member);
}

void sync_limits::sent(const std::string& member, clock::time_point now) {
  sent_[member] = now;
}

sync_limits::clock::time_point sync_limits::next_send(const std::string& member) const {
  auto it = sent_.find(member);
  return it == sent_.end() ? clock::time_point{} : it->second + interval_;
}

bool sync_limits::accept(const std::string& member, std::uint64_t sync_id, clock::time_point now) {
  auto [it, fresh] = received_.try_emplace(member);
  auto& in = it->second;
  if (!fresh && sync_id != 0 && sync_id == in.sync_id) {
    return true; // another part of the sync taken last
  }
  if (!fresh && now - in.started < interval_ / 2) {
    return false;
  }
  in.sync_id = sync_id;
  in.started = now;
  return true;
}

void sync_limits::forget(const std::string& member) {
  sent_.erase(member);
  received_.erase(member);
}

} // namespace troupe::cluster
