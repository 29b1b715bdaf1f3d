#pragma once

#include "transport/http_types.hpp"

#include <cstddef>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

namespace troupe::sim {

/// One request as the simulator received it.
struct logged_request {
  std::string method;             ///< `GET`, `POST`, ...
  std::string target;             ///< Path and query.
  transport::header_list headers; ///< Names lowercased, in arrival order.
  std::string body;               ///< Raw body.
  double time = 0;                ///< Arrival, seconds since the Unix epoch.
};

/// The last `capacity` requests received, for tests to inspect (`GET /sim/requests`).
class request_log {
public:
  /// A log keeping at most `capacity` requests (0 keeps none).
  explicit request_log(std::size_t capacity) : capacity_(capacity) {}

  /// Records `req`, received at `time` (seconds since the epoch), dropping the oldest if full.
  void record(const transport::request& req, double time);

  /// Forgets every request.
  void clear() noexcept { entries_.clear(); }

  /// Requests held now.
  std::size_t size() const noexcept { return entries_.size(); }

  /// `{"requests":[{"method","path","headers":{name: value},"body","json","time"}]}`, oldest
  /// first; `json` is the parsed body or null. Repeated headers are joined with ", ".
  nlohmann::json to_json() const;

private:
  std::size_t capacity_;
  std::deque<logged_request> entries_;
};

} // namespace troupe::sim
