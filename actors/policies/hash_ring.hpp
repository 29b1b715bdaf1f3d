#pragma once

#include <algorithm>
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

  /// Adds members: each (name, member number) pair gets its points. One pass over the ring
  /// for the whole batch, whatever its size (the points of a change are merged in).
  void add(const std::vector<std::pair<std::string, std::uint32_t>>& members);

  /// Removes the points of every member `gone` accepts, in one pass.
  template <class Gone> void remove_if(Gone gone) {
    std::size_t before = ring_.size();
    ring_.erase(
        std::remove_if(ring_.begin(), ring_.end(), [&](const point& p) { return gone(p.member); }),
        ring_.end());
    members_ -= (before - ring_.size()) / (points_ ? points_ : 1);
  }

  /// The member owning `key`, walking on past members `eligible` (indexed by member; missing
  /// entries are not eligible) refuses; npos when it accepts none.
  std::size_t find(std::string_view key, const std::vector<char>& eligible) const;

  /// The member owning `key`, walking on past members `accept(member)` refuses: O(log points)
  /// plus the points walked past; npos when it accepts none.
  template <class Accept> std::size_t find_if(std::string_view key, Accept accept) const {
    if (ring_.empty()) {
      return npos;
    }
    auto h = hash(key);
    auto start = static_cast<std::size_t>(
        std::lower_bound(ring_.begin(), ring_.end(), h,
                         [](const point& p, std::uint64_t v) { return p.at < v; }) -
        ring_.begin());
    for (std::size_t k = 0; k < ring_.size(); ++k) {
      auto& p = ring_[(start + k) % ring_.size()];
      if (accept(static_cast<std::size_t>(p.member))) {
        return p.member;
      }
    }
    return npos;
  }

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
  std::vector<point> ring_;        ///< Sorted by position, then by member name.
  std::vector<std::string> names_; ///< By member number: ties on the ring go by name.
};

} // namespace troupe::actors
