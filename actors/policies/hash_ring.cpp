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
  ring_.reserve(names.size() * points_);
  std::string label;
  for (std::size_t m = 0; m < names.size(); ++m) {
    for (std::size_t i = 0; i < points_; ++i) {
      label = names[m];
      label += '#';
      label += std::to_string(i);
      ring_.push_back({hash(label), static_cast<std::uint32_t>(m)});
    }
  }
  // Ties (vanishingly rare) go to the member listed first, whatever the order of `names`.
  std::sort(ring_.begin(), ring_.end(), [&](const point& a, const point& b) {
    return a.at != b.at ? a.at < b.at : names[a.member] < names[b.member];
  });
  members_ = names.size();
}

std::size_t hash_ring::find(std::string_view key, const std::vector<char>& eligible) const {
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
    if (p.member < eligible.size() && eligible[p.member]) {
      return p.member;
    }
  }
  return npos;
}

} // namespace troupe::actors
