#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::actors {

/// `bucket`'s ranges of prompt lengths: consecutive ranges that cover 0..∞ exactly (the last
/// one open-ended), one per worker. A change of the workers moves only the ranges next to it:
/// a removed worker's range goes to its neighbours (half each; all of it to the one neighbour
/// at an end), an added worker takes the upper half of the widest range. The workers that stay
/// keep their ranges, so churn re-homes only the lengths of the ranges it touched. O(log W) per
/// change and per lookup.
class length_ranges {
public:
  /// The largest length: the upper bound of the last range.
  static constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

  /// A worker, as a strategy may remember one (it may have left since).
  struct owner {
    std::string id;
    std::uint64_t seq = 0; ///< Registration order (finds it among the candidates).
  };

  /// One range: lengths `from`..`to` (`to` == unbounded for the last).
  struct range {
    std::size_t from = 0;
    std::size_t to = 0;
    const owner* who = nullptr; ///< Valid until the next change.
  };

  /// `span` is the extent of lengths the ranges start from (smg's `l_max`): even slices of it,
  /// and the width the last, open-ended range counts as when it is alone.
  explicit length_ranges(std::size_t span) : span_(span) {}

  /// Even slices of 0..span for `owners`, in their order (the last one open-ended).
  void reset(const std::vector<owner>& owners);

  /// Cuts the ranges at `uppers` (one per range but the last, strictly increasing), the
  /// owners staying in their order.
  void refit(const std::vector<std::size_t>& uppers);

  /// Adds `w` (a no-op when it has a range): it takes the upper half of the widest range.
  void add(owner w);

  /// Removes the range of `id`, its lengths going to the neighbours; false when it had none.
  bool remove(std::string_view id);

  /// Updates the registration order of `id` (a worker registered again at another place).
  void renumber(std::string_view id, std::uint64_t seq);

  bool contains(std::string_view id) const { return upper_of_.count(std::string{id}) != 0; }
  std::size_t size() const noexcept { return by_upper_.size(); }
  bool empty() const noexcept { return by_upper_.empty(); }

  /// The ranges in order of length.
  std::vector<range> list() const;

  /// The owners in order of their distance from the range holding `length` (that range's
  /// first, then one step above and below, and so on), until `visit` returns true.
  template <class F> void nearest(std::size_t length, F&& visit) const {
    auto home = by_upper_.lower_bound(length);
    if (home == by_upper_.end()) {
      return;
    }
    if (visit(home->second.who)) {
      return;
    }
    auto up = std::next(home);
    auto down = home;
    while (up != by_upper_.end() || down != by_upper_.begin()) {
      if (up != by_upper_.end() && visit((up++)->second.who)) {
        return;
      }
      if (down != by_upper_.begin() && visit((--down)->second.who)) {
        return;
      }
    }
  }

private:
  struct slot {
    owner who;
    std::size_t width = 0; ///< As entered in `by_width_` (when `tracked`).
    bool tracked = false;
  };
  using map = std::map<std::size_t, slot>;                         ///< By the range's upper bound.
  using width_set = std::set<std::pair<std::size_t, std::size_t>>; ///< (width, upper).

  /// The first length of the range ending at `it`.
  std::size_t from(map::const_iterator it) const;
  /// The width the open-ended last range counts as: what is left of the span above its start,
  /// or the mean width of the others, whichever is larger (at least 1).
  std::size_t last_width() const;
  /// Makes the range ending at `it` end at `upper` (no range may end there already).
  map::iterator move_upper(map::iterator it, std::size_t upper);
  /// Adds the range of `w` ending at `upper`.
  map::iterator insert(std::size_t upper, owner w);
  /// Takes the range at `it` out of / into `by_width_` (finite ranges only); `track` takes
  /// the set's node from `spare` when it has one (a refit reuses the set's nodes).
  void untrack(map::iterator it);
  void track(map::iterator it, std::vector<width_set::node_type>* spare = nullptr);

  std::size_t span_;
  map by_upper_;
  std::unordered_map<std::string, std::size_t> upper_of_; ///< Owner id -> upper bound.
  width_set by_width_;                                    ///< Finite ranges.
};

} // namespace troupe::actors
