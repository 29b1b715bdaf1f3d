#include "services/request_tracker.hpp"

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

request_tracker::~request_tracker() {
  entries_.clear_and_dispose([](entry* e) { auto hold = std::move(e->listed_); });
}

request_tracker::ticket request_tracker::begin(std::string id, std::string_view route) {
  auto t = std::make_shared<entry>(std::move(id), route);
  std::lock_guard guard{mx_};
  entries_.push_back(*t);
  t->listed_ = t;
  return t;
}

void request_tracker::update(const ticket& t, request_phase phase) {
  if (t) {
    t->phase_.store(phase, std::memory_order_relaxed);
  }
}

void request_tracker::set_model(const ticket& t, const std::string& model) {
  if (t) {
    std::lock_guard guard{t->mx_};
    t->model_ = model;
  }
}

void request_tracker::add_worker(const ticket& t, std::shared_ptr<const std::string> worker) {
  if (t && worker) {
    std::lock_guard guard{t->mx_};
    t->workers_.push_back(std::move(worker));
  }
}

void request_tracker::add_worker(const ticket& t, std::string_view worker) {
  if (t) {
    add_worker(t, std::make_shared<const std::string>(worker));
  }
}

void request_tracker::end(const ticket& t) {
  if (!t) {
    return;
  }
  std::shared_ptr<entry> hold; // released after the lock (the caller's ticket outlives it)
  std::lock_guard guard{mx_};
  if (t->listed_) {
    entries_.erase(entries_.iterator_to(*t));
    hold = std::move(t->listed_);
  }
}

std::size_t request_tracker::size() const {
  std::lock_guard guard{mx_};
  return entries_.size();
}

nlohmann::json request_tracker::list(std::chrono::milliseconds min_age) const {
  auto now = std::chrono::steady_clock::now();
  auto out = nlohmann::json::array();
  std::lock_guard guard{mx_};
  for (auto& e : entries_) { // the oldest first: they are in the order they began
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - e.started_);
    if (age < min_age) {
      continue;
    }
    std::lock_guard entry_guard{e.mx_};
    auto workers = nlohmann::json::array();
    for (auto& w : e.workers_) {
      workers.push_back(*w);
    }
    out.push_back({{"id", e.id_},
                   {"route", e.route_},
                   {"model", e.model_},
                   {"phase", to_string(e.phase_.load(std::memory_order_relaxed))},
                   {"workers", std::move(workers)},
                   {"age_ms", age.count()}});
  }
  return out;
}

} // namespace troupe::services
