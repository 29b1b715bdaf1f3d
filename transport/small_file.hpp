#pragma once

// The whole text of a small system file (/proc, /sys, a cgroup's), as the io loop's CPU checks
// and the process metrics read them.

#include <fstream>
#include <sstream>
#include <string>

namespace troupe::transport {

/// The text of the file at `path` (/proc files report a size of 0: read until the end), or
/// empty when it cannot be opened.
inline std::string read_small_file(const char* path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return in ? out.str() : std::string{};
}

} // namespace troupe::transport
