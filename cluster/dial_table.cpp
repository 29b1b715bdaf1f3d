#include "cluster/dial_table.hpp"

#include <algorithm>

namespace troupe::cluster {

bool dial_table::add_seed(const std::string& address, std::string& why) {
  auto where = parse_endpoint(address, why);
  if (!where) {
    return false;
  }
  auto& e = entries_[address];
  e.where = *where;
  e.seed = true;
  return true;
}

dial_table::learned dial_table::learn(const std::string& address, const std::string& own,
                                      std::string& why) {
  if (address.empty() || address == own || entries_.count(address)) {
    return learned::known;
  }
  auto where = parse_endpoint(address, why);
  if (!where) {
    return learned::invalid;
  }
  if (learned_count() >= settings_.max_learned) {
    why = "already dialing " + std::to_string(settings_.max_learned) + " learned addresses";
    return learned::full;
  }
  entries_[address].where = *where;
  return learned::added;
}

void dial_table::succeeded(const std::string& address) {
  if (auto* e = find(address)) {
    e->connecting = false;
    e->failures = 0;
    e->backoff = std::chrono::milliseconds{0};
    e->last_error.clear();
    e->diagnosis.clear();
    // While linked, `due` skips it; once the link is lost, `lost` schedules the redial.
  }
}

bool dial_table::failed(const std::string& address, std::string error, clock::time_point now) {
  auto it = entries_.find(address);
  if (it == entries_.end()) {
    return false;
  }
  auto& e = it->second;
  e.last_error = std::move(error);
  ++e.failures;
  if (!e.seed && e.failures >= settings_.max_failures) {
    entries_.erase(it);
    ++dropped_;
    return true;
  }
  schedule_retry(e, now);
  return false;
}

void dial_table::lost(const std::string& address, clock::time_point now) {
  if (auto* e = find(address)) {
    schedule_retry(*e, now);
  }
}

void dial_table::mark_self(const std::string& address) {
  if (auto* e = find(address)) {
    e->self = true;
    e->connecting = false;
  }
}

void dial_table::hurry(const std::string& address, clock::time_point now) {
  if (auto* e = find(address); e && !e->connecting) {
    e->next_attempt = now;
  }
}

dial_table::entry* dial_table::find(const std::string& address) {
  auto it = entries_.find(address);
  return it == entries_.end() ? nullptr : &it->second;
}

void dial_table::schedule_retry(entry& e, clock::time_point now) {
  e.connecting = false;
  e.backoff = e.backoff.count() == 0 ? settings_.reconnect_min
                                     : std::min(e.backoff * 2, settings_.reconnect_max);
  e.next_attempt = now + e.backoff;
}

std::size_t dial_table::learned_count() const {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](auto& kv) { return !kv.second.seed; }));
}

} // namespace troupe::cluster
