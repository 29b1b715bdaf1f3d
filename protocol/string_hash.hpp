#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace troupe::protocol {

/// Hashes `std::string` keys and `std::string_view` probes alike, so that an unordered container
/// declared with it and `std::equal_to<>` is searched by a view without making a string.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

} // namespace troupe::protocol
