#include "actors/policies/hash_ring.hpp"

#include <algorithm>
#include <utility>

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
  main_.clear();
  recent_.clear();
  names_.clear();
  dead_.clear();
  dead_members_.clear();
  dead_points_ = 0;
  freed_.clear();
  members_ = 0;
  std::vector<std::pair<std::string, std::uint32_t>> all;
  all.reserve(names.size());
  for (std::size_t m = 0; m < names.size(); ++m) {
    all.emplace_back(names[m], static_cast<std::uint32_t>(m));
  }
  add(all);
}

void hash_ring::add(const std::vector<std::pair<std::string, std::uint32_t>>& members) {
  if (members.empty()) {
    return;
  }
  for (auto& [name, m] : members) {
    if (m < dead_.size() && dead_[m]) {
      // A number given again before its old points left (not from take_freed).
      compact();
      std::erase_if(freed_, [&](std::uint32_t f) {
        return std::any_of(members.begin(), members.end(),
                           [f](auto& added) { return added.second == f; });
      });
      break;
    }
  }
  std::vector<point> fresh;
  fresh.reserve(members.size() * points_);
  std::string label;
  for (auto& [name, m] : members) {
    if (names_.size() <= m) {
      names_.resize(m + 1);
      dead_.resize(m + 1, 0);
    }
    names_[m] = name;
    for (std::size_t i = 0; i < points_; ++i) {
      label = name;
      label += '#';
      label += std::to_string(i);
      fresh.push_back({hash(label), m});
    }
  }
  auto order = [this](const point& a, const point& b) { return before(a, b); };
  std::sort(fresh.begin(), fresh.end(), order);
  if (recent_.empty()) {
    recent_ = std::move(fresh); // a burst (a whole fleet at start) is not copied once more
  } else {
    std::vector<point> merged;
    merged.reserve(recent_.size() + fresh.size());
    std::merge(recent_.begin(), recent_.end(), fresh.begin(), fresh.end(),
               std::back_inserter(merged), order);
    recent_ = std::move(merged);
  }
  fresh = {};
  members_ += members.size();
  // The second ring stays small next to the main one: each add copies only it.
  if (recent_.size() > std::max<std::size_t>(points_ * 64, main_.size() / 16)) {
    compact();
  }
}

void hash_ring::remove(const std::vector<std::uint32_t>& members) {
  for (auto m : members) {
    if (m >= names_.size() || dead_[m] || names_[m].empty()) {
      continue;
    }
    dead_[m] = 1;
    dead_members_.push_back(m);
    dead_points_ += points_;
    --members_;
  }
  if (dead_points_ * 4 > main_.size() + recent_.size()) {
    compact();
  }
}

std::vector<std::uint32_t> hash_ring::take_freed() {
  return std::exchange(freed_, {});
}

void hash_ring::compact() {
  if (main_.empty() && dead_points_ == 0) {
    main_ = std::move(recent_);
    recent_ = {};
    return;
  }
  std::vector<point> merged;
  merged.reserve(main_.size() + recent_.size() - dead_points_);
  auto alive = [this](const point& p) { return !dead_[p.member]; };
  std::size_t a = 0;
  std::size_t b = 0;
  while (a < main_.size() || b < recent_.size()) {
    const point* p;
    if (b == recent_.size() || (a < main_.size() && before(main_[a], recent_[b]))) {
      p = &main_[a++];
    } else {
      p = &recent_[b++];
    }
    if (alive(*p)) {
      merged.push_back(*p);
    }
  }
  main_ = std::move(merged);
  recent_ = {}; // its capacity too: it stays small from now on
  for (auto m : dead_members_) {
    dead_[m] = 0;
    names_[m].clear();
    freed_.push_back(m);
  }
  dead_members_.clear();
  dead_points_ = 0;
}

std::size_t hash_ring::find(std::string_view key, const std::vector<char>& eligible) const {
  return find_if(key, [&](std::size_t m) { return m < eligible.size() && eligible[m]; });
}

} // namespace troupe::actors
