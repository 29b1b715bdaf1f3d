#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// A consistent-hash ring: each member owns `points` pseudo-random points ("virtual nodes"),
/// placed by hashing its name, and a key belongs to the member owning the first point at or
/// after the key's hash. Adding or removing one of N members moves only the keys of the arcs
/// it gains or loses, ~1/N of them. Placement depends on the names alone (a stable hash, not
/// `std::hash`), so every gateway node, before and after a restart, maps a key alike.
class hash_ring {
public:
  /// Sentinel of `find`.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  explicit hash_ring(std::size_t points = 160) : points_(points) {}

  /// Places `names` on the ring (member i is `names[i]`), replacing the previous members.
  void assign(const std::vector<std::string>& names);

  /// The member owning `key`, walking on past members `eligible` (indexed by member; missing
  /// entries are not eligible) refuses; npos when it accepts none.
  std::size_t find(std::string_view key, const std::vector<char>& eligible) const;

  /// Members on the ring.
  std::size_t members() const noexcept { return members_; }

  /// Points on the ring.
  std::size_t size() const noexcept { return ring_.size(); }

  /// The ring's 64-bit hash: FNV-1a, then a finalizer that spreads similar strings apart.
  static std::uint64_t hash(std::string_view s) noexcept;

private:
  struct point {
    std::uint64_t at;
    std::uint32_t member;
  };

  std::size_t points_;
  std::size_t members_ = 0;
  std::vector<point> ring_; ///< Sorted by position.
};

} // namespace troupe::actors
