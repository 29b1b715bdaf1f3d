#include "services/request_tracker.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace troupe::services {

std::string_view to_string(request_phase p) noexcept {
  switch (p) {
  case request_phase::queued:
    return "queued";
  case request_phase::parsing:
    return "parsing";
  case request_phase::selecting:
    return "selecting";
  case request_phase::locating:
    return "locating";
  case request_phase::backing_off:
    return "backing_off";
  case request_phase::dispatched:
    return "dispatched";
  case request_phase::streaming:
    return "streaming";
  case request_phase::joining:
    return "joining";
  case request_phase::prefilling:
    return "prefilling";
  case request_phase::decoding:
    return "decoding";
  }
  return "parsing";
}

request_tracker::ticket request_tracker::begin(const std::string& id, std::string route) {
  std::lock_guard guard{mx_};
  const auto t = next_++;
  auto& e = entries_[t];
  e.id = id;
  e.route = std::move(route);
  e.started = std::chrono::steady_clock::now();
  return t;
}

void request_tracker::update(ticket t, request_phase phase) {
  std::lock_guard guard{mx_};
  if (auto it = entries_.find(t); it != entries_.end()) {
    it->second.phase = phase;
  }
}

void request_tracker::set_model(ticket t, const std::string& model) {
  std::lock_guard guard{mx_};
  if (auto it = entries_.find(t); it != entries_.end()) {
    it->second.model = model;
  }
}

void request_tracker::add_worker(ticket t, const std::string& worker) {
  std::lock_guard guard{mx_};
  if (auto it = entries_.find(t); it != entries_.end()) {
    it->second.workers.push_back(worker);
  }
}

void request_tracker::end(ticket t) {
  std::lock_guard guard{mx_};
  entries_.erase(t);
}

std::size_t request_tracker::size() const {
  std::lock_guard guard{mx_};
  return entries_.size();
}

nlohmann::json request_tracker::list(std::chrono::milliseconds min_age) const {
  auto now = std::chrono::steady_clock::now();
  auto out = nlohmann::json::array();
  std::lock_guard guard{mx_};
  for (auto& [t, e] : entries_) {
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - e.started);
    if (age < min_age) {
      continue;
    }
    out.push_back({{"id", e.id},
                   {"route", e.route},
                   {"model", e.model},
                   {"phase", to_string(e.phase)},
                   {"workers", e.workers},
                   {"age_ms", age.count()}});
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) {
    return a["age_ms"].template get<long long>() > b["age_ms"].template get<long long>();
  });
  return out;
}

} // namespace troupe::services
