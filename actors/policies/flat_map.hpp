#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace troupe::actors {

/// A map from pointers or unsigned integers to small values in one flat array (open addressing,
/// linear probing, at most half full). A lookup reads one slot, most often one cache line, where
/// a `std::unordered_map` reads a bucket and then a node somewhere else: two cold lines per
/// lookup when a pick looks at 32 sampled workers of 4,000. `prefetch` starts loading a key's
/// slot, so that a batch of lookups waits for memory about once. Removal shifts the probe chain
/// back (no tombstones): the table never degrades under churn.
///
/// One key value marks an empty slot and cannot be stored: null for pointers, the largest value
/// for integers (`empty_key`).
template <class Key, class Value> class flat_map {
  static_assert(std::is_pointer_v<Key> || std::is_unsigned_v<Key>,
                "flat_map keys are pointers or unsigned integers");

public:
  /// The key no entry may have: it marks an empty slot.
  static constexpr Key empty_key = [] {
    if constexpr (std::is_pointer_v<Key>) {
      return Key{nullptr};
    } else {
      return std::numeric_limits<Key>::max();
    }
  }();

  /// The value of `key`, or nullptr. The pointer is valid until the next change of the map.
  const Value* find(Key key) const noexcept {
    if (size_ == 0) {
      return nullptr;
    }
    for (auto i = home(key);; i = next(i)) {
      const auto& s = slots_[i];
      if (s.key == key) {
        return &s.value;
      }
      if (s.key == empty_key) {
        return nullptr;
      }
    }
  }

  /// Sets the value of `key` (not `empty_key`), adding it when absent.
  void insert_or_assign(Key key, Value value) {
    if ((size_ + 1) * 2 > slots_.size()) {
      grow();
    }
    for (auto i = home(key);; i = next(i)) {
      auto& s = slots_[i];
      if (s.key == key) {
        s.value = value;
        return;
      }
      if (s.key == empty_key) {
        s = {key, value};
        ++size_;
        return;
      }
    }
  }

  /// Removes `key`; false when it was absent.
  bool erase(Key key) noexcept {
    if (size_ == 0) {
      return false;
    }
    auto i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == empty_key) {
        return false;
      }
      i = next(i);
    }
    // Backward shift: each later member of the probe chain whose home is not in (hole, it]
    // moves into the hole, so that every key stays reachable from its home without a gap.
    auto hole = i;
    for (auto j = next(i); slots_[j].key != empty_key; j = next(j)) {
      auto h = home(slots_[j].key);
      bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = {};
    --size_;
    return true;
  }

  /// Starts loading the slot where a lookup of `key` begins.
  void prefetch(Key key) const noexcept {
    if (!slots_.empty()) {
      __builtin_prefetch(&slots_[home(key)]);
    }
  }

  void clear() noexcept {
    slots_.assign(slots_.size(), slot{});
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

private:
  struct slot {
    Key key = empty_key;
    Value value{};
  };

  std::size_t home(Key key) const noexcept {
    // Allocations are aligned and indices dense, so the low bits say little: mix them all (a
    // 64-bit finalizer).
    std::uint64_t x;
    if constexpr (std::is_pointer_v<Key>) {
      x = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    } else {
      x = static_cast<std::uint64_t>(key);
    }
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x) & (slots_.size() - 1);
  }

  std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  void grow() {
    std::vector<slot> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (auto& s : old) {
      if (s.key != empty_key) {
        insert_or_assign(s.key, s.value);
      }
    }
  }

  std::vector<slot> slots_; ///< A power of two long (or empty).
  std::size_t size_ = 0;
};

} // namespace troupe::actors
