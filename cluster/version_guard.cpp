#include "cluster/version_guard.hpp"

#include <algorithm>
#include <spdlog/fmt/fmt.h>

namespace troupe::cluster {

std::vector<std::string> version_guard::remove_ahead(std::vector<protocol::worker_record>& records,
                                                     std::int64_t now_ms) const {
  std::vector<std::string> refused;
  auto limit = static_cast<std::uint64_t>(std::max<std::int64_t>(now_ms, 0)) +
               static_cast<std::uint64_t>(tolerance_.count());
  auto end = std::remove_if(records.begin(), records.end(), [&](const auto& r) {
    if (r.version <= limit) {
      return false;
    }
    auto ahead = r.version - static_cast<std::uint64_t>(std::max<std::int64_t>(now_ms, 0));
    refused.push_back(fmt::format("worker {} from {}, version {}: {:.1f} s ahead of this "
                                  "node's clock (tolerance {:.1f} s)",
                                  r.id, r.origin, r.version, ahead / 1000.0,
                                  tolerance_.count() / 1000.0));
    return true;
  });
  records.erase(end, records.end());
  return refused;
}

} // namespace troupe::cluster
