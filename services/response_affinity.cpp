#include "services/response_affinity.hpp"

#include "protocol/sse.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace troupe::services {

void response_affinity::remember(std::string response_id, std::string worker_id) {
  put(std::move(response_id), std::move(worker_id), true);
}

void response_affinity::remember_remote(std::string response_id, std::string worker_id) {
  put(std::move(response_id), std::move(worker_id), false);
}

void response_affinity::put(std::string response_id, std::string worker_id, bool local) {
  auto now = now_();
  std::lock_guard guard{mx_};
  sweep(now);
  if (local && sharing_) {
    outbox_.emplace_back(response_id, worker_id);
    while (outbox_.size() > outbox_capacity_) {
      outbox_.pop_front();
      ++outbox_dropped_;
    }
  } else if (!local) {
    ++from_peers_;
  }
  auto [it, inserted] = workers_.insert_or_assign(response_id, entry{std::move(worker_id), now});
  if (!inserted) {
    return; // the id keeps its place in the order (and its age for the sweep: see sweep)
  }
  order_.emplace_back(std::move(response_id), now);
  while (order_.size() > capacity_) {
    workers_.erase(order_.front().first);
    order_.pop_front();
  }
}

void response_affinity::sweep(clock::time_point now) {
  if (ttl_.count() == 0) {
    return;
  }
  while (!order_.empty() && now - order_.front().second >= ttl_) {
    auto it = workers_.find(order_.front().first);
    if (it != workers_.end() && now - it->second.at >= ttl_) {
      workers_.erase(it);
      ++expired_;
    } else if (it != workers_.end()) {
      order_.emplace_back(order_.front().first, it->second.at); // remembered again since
    }
    order_.pop_front();
  }
}

std::optional<std::string> response_affinity::worker_of(std::string_view response_id) const {
  auto now = now_();
  std::lock_guard guard{mx_};
  if (auto it = workers_.find(std::string(response_id)); it != workers_.end()) {
    if (ttl_.count() != 0 && now - it->second.at >= ttl_) {
      return std::nullopt; // the next write sweeps it
    }
    return it->second.worker;
  }
  return std::nullopt;
}

std::size_t response_affinity::size() const {
  std::lock_guard guard{mx_};
  return workers_.size();
}

void response_affinity::share_with_peers(std::size_t outbox_capacity) {
  std::lock_guard guard{mx_};
  sharing_ = outbox_capacity > 0;
  outbox_capacity_ = outbox_capacity;
}

std::size_t response_affinity::clear_outbox() {
  std::lock_guard guard{mx_};
  auto n = outbox_.size();
  outbox_.clear();
  return n;
}

std::vector<std::pair<std::string, std::string>> response_affinity::take_outbox(std::size_t max) {
  std::lock_guard guard{mx_};
  std::vector<std::pair<std::string, std::string>> out;
  auto n = std::min(max, outbox_.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(std::move(outbox_.front()));
    outbox_.pop_front();
  }
  shared_ += n;
  return out;
}

std::vector<std::pair<std::string, std::string>>
response_affinity::snapshot(std::size_t max) const {
  auto now = now_();
  std::lock_guard guard{mx_};
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(std::min(max, order_.size()));
  // `order_` is insertion order, each id once (a sweep moves an id learned again to its end).
  for (auto it = order_.rbegin(); it != order_.rend() && out.size() < max; ++it) {
    auto w = workers_.find(it->first);
    if (w == workers_.end() || (ttl_.count() != 0 && now - w->second.at >= ttl_)) {
      continue;
    }
    out.emplace_back(it->first, w->second.worker);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

response_affinity::counts response_affinity::stats() const {
  std::lock_guard guard{mx_};
  return {workers_.size(), outbox_.size(), shared_, from_peers_, outbox_dropped_, expired_};
}

std::string created_response_id(std::string_view piece) {
  using json = nlohmann::json;
  auto id_of = [](const json& j) -> std::string {
    if (j.is_object()) {
      if (auto id = j.find("id"); id != j.end() && id->is_string()) {
        return id->get<std::string>();
      }
    }
    return {};
  };
  // An SSE event starts with a field name; a JSON body with `{`.
  auto first = piece.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && piece[first] == '{') {
    auto body = json::parse(piece, nullptr, false);
    if (body.is_object() && body.value("object", "") == "response") {
      return id_of(body);
    }
    return {};
  }
  auto ev = protocol::parse_sse_event(piece);
  if (ev.event != "response.created" && ev.data.find("\"response.created\"") == std::string::npos) {
    return {};
  }
  auto data = json::parse(ev.data, nullptr, false);
  if (data.is_object() && data.value("type", "") == "response.created") {
    if (auto r = data.find("response"); r != data.end()) {
      return id_of(*r);
    }
  }
  return {};
}

std::function<void(std::string_view piece)>
remember_response_id(std::shared_ptr<response_affinity> affinity, std::string worker_id) {
  return [affinity = std::move(affinity), worker_id = std::move(worker_id),
          done = false](std::string_view piece) mutable {
    if (done) {
      return;
    }
    if (auto id = created_response_id(piece); !id.empty()) {
      affinity->remember(std::move(id), worker_id);
      done = true;
    }
  };
}

} // namespace troupe::services
