#include "services/response_affinity.hpp"

#include "protocol/sse.hpp"

#include <nlohmann/json.hpp>

namespace troupe::services {

void response_affinity::remember(std::string response_id, std::string worker_id) {
  std::lock_guard guard{mx_};
  auto [it, inserted] = workers_.insert_or_assign(response_id, std::move(worker_id));
  if (!inserted) {
    return;
  }
  order_.push_back(std::move(response_id));
  while (order_.size() > capacity_) {
    workers_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<std::string> response_affinity::worker_of(std::string_view response_id) const {
  std::lock_guard guard{mx_};
  if (auto it = workers_.find(std::string(response_id)); it != workers_.end()) {
    return it->second;
  }
  return std::nullopt;
}

std::size_t response_affinity::size() const {
  std::lock_guard guard{mx_};
  return workers_.size();
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
