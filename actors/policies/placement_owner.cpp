#include "actors/policies/placement_owner.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace troupe::actors {

namespace {

/// A 64-bit finalizer (splitmix64's): the weight of one node for one seed.
std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

} // namespace

placement_owners::placement_owners(std::string self, const std::vector<std::string>& members)
    : self_(std::move(self)) {
  nodes_.push_back({XXH3_64bits(self_.data(), self_.size()), self_});
  for (auto& m : members) {
    if (m != self_) {
      nodes_.push_back({XXH3_64bits(m.data(), m.size()), m});
    }
  }
}

const std::string& placement_owners::owner(std::uint64_t head) const noexcept {
  if (nodes_.empty()) {
    return self_;
  }
  const node* best = &nodes_.front();
  auto best_w = mix(best->hash ^ head);
  for (auto& n : nodes_) {
    auto w = mix(n.hash ^ head);
    // Ties (never in practice) go to the smaller name, the same on every node.
    if (w > best_w || (w == best_w && n.name < best->name)) {
      best = &n;
      best_w = w;
    }
  }
  return best->name;
}

} // namespace troupe::actors
