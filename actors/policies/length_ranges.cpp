#include "actors/policies/length_ranges.hpp"

#include <algorithm>

namespace troupe::actors {

std::size_t length_ranges::from(map::const_iterator it) const {
  return it == by_upper_.begin() ? 0 : std::prev(it)->first + 1;
}

std::size_t length_ranges::last_width() const {
  auto last = std::prev(by_upper_.end());
  const auto start = from(last);
  const auto left = span_ > start ? span_ - start : 0;
  const auto others = by_upper_.size() - 1;
  const auto mean = others == 0 ? 0 : start / others;
  return std::max({left, mean, std::size_t{1}});
}

void length_ranges::untrack(map::iterator it) {
  if (it->second.tracked) {
    by_width_.erase({it->second.width, it->first});
    it->second.tracked = false;
  }
}

void length_ranges::track(map::iterator it, std::vector<width_set::node_type>* spare) {
  untrack(it);
  if (it->first == unbounded) {
    return;
  }
  it->second.width = it->first - from(it) + 1;
  it->second.tracked = true;
  if (spare == nullptr || spare->empty()) {
    by_width_.insert({it->second.width, it->first});
    return;
  }
  auto node = std::move(spare->back());
  spare->pop_back();
  node.value() = {it->second.width, it->first};
  by_width_.insert(std::move(node));
}

length_ranges::map::iterator length_ranges::move_upper(map::iterator it, std::size_t upper) {
  untrack(it);
  auto node = by_upper_.extract(it);
  node.key() = upper;
  upper_of_[node.mapped().who.id] = upper;
  return by_upper_.insert(std::move(node)).position;
}

length_ranges::map::iterator length_ranges::insert(std::size_t upper, owner w) {
  upper_of_[w.id] = upper;
  return by_upper_.emplace(upper, slot{std::move(w)}).first;
}

void length_ranges::reset(const std::vector<owner>& owners) {
  by_upper_.clear();
  upper_of_.clear();
  by_width_.clear();
  const auto n = owners.size();
  const auto gap = n == 0 ? span_ : std::max<std::size_t>(span_ / n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    insert(i + 1 == n ? unbounded : (i + 1) * gap - 1, owners[i]);
  }
  for (auto it = by_upper_.begin(); it != by_upper_.end(); ++it) {
    track(it);
  }
}

void length_ranges::refit(const std::vector<std::size_t>& uppers) {
  // The same nodes under their new keys, in place: both key sequences increase and the owners
  // keep their order, so each node goes back at the end (a hinted insert, O(1)) and the width
  // set reuses its nodes. No allocation, O(W) but for the width set's ordering.
  const auto n = by_upper_.size();
  std::vector<map::node_type> nodes;
  nodes.reserve(n);
  while (!by_upper_.empty()) {
    nodes.push_back(by_upper_.extract(by_upper_.begin()));
  }
  std::vector<width_set::node_type> widths;
  widths.reserve(by_width_.size());
  while (!by_width_.empty()) {
    widths.push_back(by_width_.extract(by_width_.begin()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto& node = nodes[i];
    node.key() = i + 1 == n ? unbounded : uppers.at(i);
    node.mapped().tracked = false;
    upper_of_.find(node.mapped().who.id)->second = node.key();
    track(by_upper_.insert(by_upper_.end(), std::move(node)), &widths);
  }
}

void length_ranges::add(owner w) {
  if (upper_of_.count(w.id) != 0) {
    return;
  }
  if (by_upper_.empty()) {
    insert(unbounded, std::move(w));
    return;
  }
  const auto open = last_width();
  if (!by_width_.empty() && by_width_.rbegin()->first >= 2 && by_width_.rbegin()->first > open) {
    // The widest finite range [f, u]: its owner keeps the lower half, `w` takes the upper.
    auto [wide, u] = *by_width_.rbegin();
    auto it = by_upper_.find(u);
    const auto f = from(it);
    it = move_upper(it, f + wide / 2 - 1);
    track(it);
    track(insert(u, std::move(w)));
    return;
  }
  // The open-ended range [f, ∞): its owner keeps [f, f + half - 1], `w` takes the rest.
  auto last = std::prev(by_upper_.end());
  const auto f = from(last);
  last = move_upper(last, f + std::max<std::size_t>(open / 2, 1) - 1);
  track(last);
  insert(unbounded, std::move(w));
}

bool length_ranges::remove(std::string_view id) {
  auto known = upper_of_.find(std::string{id});
  if (known == upper_of_.end()) {
    return false;
  }
  auto it = by_upper_.find(known->second);
  upper_of_.erase(known);
  const auto f = from(it);
  const auto u = it->first;
  const bool first = it == by_upper_.begin();
  untrack(it);
  auto after = by_upper_.erase(it);
  if (by_upper_.empty()) {
    return true;
  }
  if (after == by_upper_.end()) {
    // The last range went: the one below it is open-ended now.
    auto below = std::prev(by_upper_.end());
    move_upper(below, unbounded);
  } else if (first) {
    // The first went: the one above starts at 0 now.
    track(after);
  } else {
    // Half to the range below (it ends at the middle), half to the one above.
    auto below = std::prev(after);
    below = move_upper(below, f + (u - f) / 2);
    track(below);
    track(after);
  }
  return true;
}

void length_ranges::renumber(std::string_view id, std::uint64_t seq) {
  if (auto known = upper_of_.find(std::string{id}); known != upper_of_.end()) {
    by_upper_.find(known->second)->second.who.seq = seq;
  }
}

std::vector<length_ranges::range> length_ranges::list() const {
  std::vector<range> out;
  out.reserve(by_upper_.size());
  for (auto it = by_upper_.begin(); it != by_upper_.end(); ++it) {
    out.push_back({from(it), it->first, &it->second.who});
  }
  return out;
}

} // namespace troupe::actors
