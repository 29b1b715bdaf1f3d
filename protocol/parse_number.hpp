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

/// The next field of `s` separated by spaces, tabs or newlines (a /proc line, a cgroup file),
/// which `s` loses; empty when none is left.
inline std::string_view next_field(std::string_view& s) {
  auto start = s.find_first_not_of(" \t\n");
  if (start == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(start);
  auto end = s.find_first_of(" \t\n");
  auto field = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return field;
}

} // namespace troupe::protocol
