#include "actors/policies/hash_ring.hpp"

#include <algorithm>

namespace troupe::actors {

std::uint64_t hash_ring::hash(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  // splitmix64's finalizer: FNV alone leaves "w#1" and "w#2" close on the ring.
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

void hash_ring::assign(const std::vector<std::string>& names) {
  ring_.clear();
  members_ = 0;
  std::vector<std::pair<std::string, std::uint32_t>> all;
  all.reserve(names.size());
  for (std::size_t m = 0; m < names.size(); ++m) {
    all.emplace_back(names[m], static_cast<std::uint32_t>(m));
  }
  add(all);
}

void hash_ring::add(const std::vector<std::pair<std::string, std::uint32_t>>& members) {
  std::vector<point> fresh;
  fresh.reserve(members.size() * points_);
  std::string label;
  for (auto& [name, m] : members) {
    if (names_.size() <= m) {
      names_.resize(m + 1);
    }
    names_[m] = name;
    for (std::size_t i = 0; i < points_; ++i) {
      label = name;
      label += '#';
      label += std::to_string(i);
      fresh.push_back({hash(label), m});
    }
  }
  // Ties (vanishingly rare) go to the member whose name sorts first, whatever the order in
  // which members came.
  auto before = [&](const point& a, const point& b) {
    return a.at != b.at ? a.at < b.at : names_[a.member] < names_[b.member];
  };
  std::sort(fresh.begin(), fresh.end(), before);
  std::vector<point> merged;
  merged.reserve(ring_.size() + fresh.size());
  std::merge(ring_.begin(), ring_.end(), fresh.begin(), fresh.end(), std::back_inserter(merged),
             before);
  ring_ = std::move(merged);
  members_ += members.size();
}

std::size_t hash_ring::find(std::string_view key, const std::vector<char>& eligible) const {
  return find_if(key, [&](std::size_t m) { return m < eligible.size() && eligible[m]; });
}

} // namespace troupe::actors
