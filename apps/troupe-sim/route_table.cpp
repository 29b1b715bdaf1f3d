#include "apps/troupe-sim/route_table.hpp"

namespace troupe::sim {

bool match_path(std::string_view pattern, std::string_view path, std::vector<std::string>& params) {
  const auto mark = params.size();
  for (;;) {
    if (pattern.empty() || path.empty()) {
      if (pattern.empty() && path.empty()) {
        return true;
      }
      params.resize(mark);
      return false;
    }
    const auto pslash = pattern.find('/', 1);
    const auto qslash = path.find('/', 1);
    const auto pseg = pattern.substr(0, pslash);
    const auto qseg = path.substr(0, qslash);
    if (pseg == "/{}") {
      if (qseg.size() < 2) {
        params.resize(mark);
        return false;
      }
      params.emplace_back(qseg.substr(1));
    } else if (pseg != qseg) {
      params.resize(mark);
      return false;
    }
    pattern = pslash == std::string_view::npos ? std::string_view{} : pattern.substr(pslash);
    path = qslash == std::string_view::npos ? std::string_view{} : path.substr(qslash);
  }
}

} // namespace troupe::sim
