#pragma once

#include "protocol/error.hpp"
#include "transport/http_types.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sim {

/// What a route is, beyond its handler.
enum class route_kind {
  data_plane, ///< Inference and stored-response endpoints: failure injection applies.
  info,       ///< Worker information and health: logged, never failed on purpose.
  control,    ///< `/sim/*` and `/health`: neither logged nor failed.
};

/// One endpoint: a method and a path pattern whose `{}` segments match any one segment.
template <class Handler> struct route {
  transport::http::verb method;
  std::string_view pattern;    ///< `/v1/responses/{}/cancel`.
  protocol::api_format format; ///< Error format of the endpoint.
  route_kind kind;
  Handler handler;
};

/// The outcome of looking a request up.
template <class Handler> struct route_match {
  const route<Handler>* found = nullptr; ///< The route, or null.
  bool path_known = false;               ///< Some route has this path (with another method).
  std::string allow;                     ///< Methods of the path, for a 405's `Allow`.
  std::vector<std::string> params;       ///< The segments matched by `{}`.
};

/// True when `path` matches `pattern`; the `{}` segments are appended to `params`.
bool match_path(std::string_view pattern, std::string_view path, std::vector<std::string>& params);

/// Maps (method, path) to a route.
template <class Handler> class route_table {
public:
  /// A table of `routes`.
  explicit route_table(std::vector<route<Handler>> routes) : routes_(std::move(routes)) {}

  /// The route of `method` and `path` (the target without its query).
  route_match<Handler> find(transport::http::verb method, std::string_view path) const {
    route_match<Handler> m;
    for (const auto& r : routes_) {
      std::vector<std::string> params;
      if (!match_path(r.pattern, path, params)) {
        continue;
      }
      m.path_known = true;
      m.allow += (m.allow.empty() ? "" : ", ") + std::string(transport::http::to_string(r.method));
      if (r.method == method && m.found == nullptr) {
        m.found = &r;
        m.params = std::move(params);
      }
    }
    return m;
  }

private:
  std::vector<route<Handler>> routes_;
};

} // namespace troupe::sim
