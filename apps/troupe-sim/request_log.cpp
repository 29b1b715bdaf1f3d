#include "apps/troupe-sim/request_log.hpp"

#include <algorithm>
#include <cctype>

namespace troupe::sim {

void request_log::record(const transport::request& req, double time) {
  if (capacity_ == 0) {
    return;
  }
  if (entries_.size() >= capacity_) {
    entries_.pop_front();
  }
  logged_request e;
  e.method = std::string(req.method_string());
  e.target = std::string(req.target());
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    e.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  e.body = req.body();
  e.time = time;
  entries_.push_back(std::move(e));
}

nlohmann::json request_log::to_json() const {
  auto list = nlohmann::json::array();
  for (const auto& e : entries_) {
    auto headers = nlohmann::json::object();
    for (const auto& [name, value] : e.headers) {
      auto& slot = headers[name];
      slot = slot.is_string() ? nlohmann::json(slot.get<std::string>() + ", " + value)
                              : nlohmann::json(value);
    }
    auto parsed = nlohmann::json::parse(e.body, nullptr, false);
    list.push_back({{"method", e.method},
                    {"path", e.target},
                    {"headers", std::move(headers)},
                    {"body", e.body},
                    {"json", parsed.is_discarded() ? nlohmann::json() : std::move(parsed)},
                    {"time", e.time}});
  }
  return {{"requests", std::move(list)}};
}

} // namespace troupe::sim
