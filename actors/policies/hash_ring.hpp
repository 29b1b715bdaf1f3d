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
///
/// A change costs O(its points), not O(the ring) (640k points at 4,000 members): a removed
/// member's points stay where they are, skipped by lookups, until a quarter of the ring is
/// dead and one pass drops them; an added member's points go to a small second ring, merged
/// into the main one when it grows past a sixteenth of it. Lookups walk both at once.
class hash_ring {
public:
  /// Sentinel of `find`.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  explicit hash_ring(std::size_t points = 160) : points_(points) {}

  /// Places `names` on the ring (member i is `names[i]`), replacing the previous members.
  void assign(const std::vector<std::string>& names);

  /// Adds members: each (name, member number) pair gets its points. A number may be one never
  /// used or one `take_freed` gave back.
  void add(const std::vector<std::pair<std::string, std::uint32_t>>& members);

  /// Removes members (numbers on the ring; others are ignored). Their numbers come back from
  /// `take_freed` once their points are gone from the ring.
  void remove(const std::vector<std::uint32_t>& members);

  /// Numbers of removed members whose points are gone, free to be given again; forgets them.
  std::vector<std::uint32_t> take_freed();

  /// The member owning `key`, walking on past members `eligible` (indexed by member; missing
  /// entries are not eligible) refuses; npos when it accepts none.
  std::size_t find(std::string_view key, const std::vector<char>& eligible) const;

  /// The member owning `key`, walking on past members `accept(member)` refuses: O(log points)
  /// plus the points walked past; npos when it accepts none.
  template <class Accept> std::size_t find_if(std::string_view key, Accept accept) const {
    if (main_.size() + recent_.size() == 0) {
      return npos;
    }
    auto h = hash(key);
    auto a = start(main_, h);
    auto b = start(recent_, h);
    // From the key's point to the end, then from the start back to it.
    auto m = walk(a, main_.size(), b, recent_.size(), accept);
    return m != npos ? m : walk(0, a, 0, b, accept);
  }

  /// Members on the ring.
  std::size_t members() const noexcept { return members_; }

  /// Points on the ring (of members not removed).
  std::size_t size() const noexcept { return main_.size() + recent_.size() - dead_points_; }

  /// The ring's 64-bit hash: FNV-1a, then a finalizer that spreads similar strings apart.
  static std::uint64_t hash(std::string_view s) noexcept;

private:
  struct point {
    std::uint64_t at;
    std::uint32_t member;
  };

  /// Ring order: by position, ties (vanishingly rare) by member name, whatever the order in
  /// which members came.
  bool before(const point& a, const point& b) const {
    return a.at != b.at ? a.at < b.at : names_[a.member] < names_[b.member];
  }

  static std::size_t start(const std::vector<point>& ring, std::uint64_t h) {
    return static_cast<std::size_t>(
        std::lower_bound(ring.begin(), ring.end(), h,
                         [](const point& p, std::uint64_t v) { return p.at < v; }) -
        ring.begin());
  }

  /// Walks main_[a, a_end) and recent_[b, b_end) in ring order, past dead points.
  template <class Accept>
  std::size_t walk(std::size_t a, std::size_t a_end, std::size_t b, std::size_t b_end,
                   Accept& accept) const {
    while (a < a_end || b < b_end) {
      const point* p;
      if (b == b_end || (a < a_end && before(main_[a], recent_[b]))) {
        p = &main_[a++];
      } else {
        p = &recent_[b++];
      }
      if (!dead_[p->member] && accept(static_cast<std::size_t>(p->member))) {
        return p->member;
      }
    }
    return npos;
  }

  /// Merges `recent_` into `main_` and drops every dead point: one pass over the ring.
  void compact();

  std::size_t points_;
  std::size_t members_ = 0;
  std::vector<point> main_;                 ///< Sorted in ring order.
  std::vector<point> recent_;               ///< Points of members added since the last compaction.
  std::vector<std::string> names_;          ///< By member number: ties on the ring go by name.
  std::vector<char> dead_;                  ///< By member number: removed, its points still here.
  std::vector<std::uint32_t> dead_members_; ///< Those, to free at the next compaction.
  std::size_t dead_points_ = 0;
  std::vector<std::uint32_t> freed_; ///< Numbers free again, not yet taken.
};

} // namespace troupe::actors
