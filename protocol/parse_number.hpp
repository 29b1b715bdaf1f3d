#pragma once

// A whole string as a number, or nothing: what a query parameter, a /proc field or a cgroup
// file holds.

#include <charconv>
#include <optional>
#include <string_view>

namespace troupe::protocol {

/// `s` read as a `T` (decimal), or nullopt unless all of `s` is one.
template <class T> std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

} // namespace troupe::protocol
