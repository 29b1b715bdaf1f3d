#pragma once

#include "apps/troupe-bench/target.hpp"

#include <optional>
#include <string>

namespace troupe::bench {

/// The first model `GET /v1/models` of `t` lists (at start-up, before any load; blocking,
/// bounded by a 10 s timeout); nothing, with `why`, when there is none.
std::optional<std::string> discover_model(const target& t, const std::string& api_key,
                                          std::string& why);

} // namespace troupe::bench
