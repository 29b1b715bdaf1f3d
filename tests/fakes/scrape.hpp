#pragma once

// Reading a Prometheus text exposition in tests.

#include <cstddef>
#include <sstream>
#include <string>

namespace troupe::test {

/// The value of the sample `series` (name and labels exactly as exposed), or -1 if absent.
inline double sample(const std::string& scrape, const std::string& series) {
  std::istringstream in{scrape};
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

/// Lines of `scrape` that start with `prefix`.
inline std::size_t count_lines(const std::string& scrape, const std::string& prefix) {
  std::istringstream in{scrape};
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    n += line.compare(0, prefix.size(), prefix) == 0;
  }
  return n;
}

} // namespace troupe::test
