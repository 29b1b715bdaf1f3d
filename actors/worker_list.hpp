#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

namespace troupe::actors {

struct worker_entry;
using worker_entry_ptr = std::shared_ptr<const worker_entry>;

/// The workers of a fleet snapshot, in registration order: a value with structural sharing.
/// A persistent B+ tree of fanout 32 whose nodes are immutable once built and shared by every
/// copy, so copying a list is one reference count, and a write (`push_back`, `set`, `erase`)
/// copies the path to one leaf (O(log W) nodes of at most 32 pointers) instead of the list
/// of every worker: the registry builds one snapshot per write without an O(W) copy and free.
///
/// Readers iterate (forward iterators), ask `size`, or index (O(log W)); the registry finds
/// an entry by its registration order (`find_seq`), its list being sorted by `seq`.
class worker_list {
  struct node;
  using node_ptr = std::shared_ptr<const node>;

public:
  /// Children per inner node and entries per leaf.
  static constexpr std::size_t fanout = 32;

  /// Reads the list in order. Keeps no node alive: valid while the list it came from is.
  class const_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = worker_entry_ptr;
    using difference_type = std::ptrdiff_t;
    using pointer = const worker_entry_ptr*;
    using reference = const worker_entry_ptr&;

    const_iterator() = default;
    reference operator*() const;
    pointer operator->() const { return &**this; }
    const_iterator& operator++();
    const_iterator operator++(int) {
      auto old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.depth_ == b.depth_ &&
             (a.depth_ == 0 || (a.path_[a.depth_ - 1].n == b.path_[b.depth_ - 1].n &&
                                a.path_[a.depth_ - 1].i == b.path_[b.depth_ - 1].i));
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) { return !(a == b); }

  private:
    friend class worker_list;
    /// Descends from `n` to its first entry.
    void descend(const node* n);

    struct step {
      const node* n = nullptr;
      std::size_t i = 0;
    };
    /// Deep enough for 32^12 entries; `depth_` == 0 is the end.
    std::array<step, 12> path_{};
    std::size_t depth_ = 0;
  };
  using iterator = const_iterator;
  using value_type = worker_entry_ptr;
  using size_type = std::size_t;

  worker_list() = default;
  /// The list of `entries`, in their order (built bottom-up, leaves full).
  worker_list(const std::vector<worker_entry_ptr>& entries); // NOLINT: a list is a vector
  worker_list(std::initializer_list<worker_entry_ptr> entries)
      : worker_list(std::vector<worker_entry_ptr>(entries)) {}

  std::size_t size() const noexcept;
  bool empty() const noexcept { return size() == 0; }
  const_iterator begin() const;
  const_iterator end() const { return {}; }

  /// The entry at `i` (< size()): O(log W).
  const worker_entry_ptr& operator[](std::size_t i) const;
  const worker_entry_ptr& front() const { return (*this)[0]; }
  const worker_entry_ptr& back() const { return (*this)[size() - 1]; }

  /// Appends `w`; copies of this list are not changed.
  void push_back(worker_entry_ptr w);

  /// Puts `w` at `i` (< size()).
  void set(std::size_t i, worker_entry_ptr w);

  /// Removes the entry at `i` (< size()).
  void erase(std::size_t i);

  void clear() noexcept { root_.reset(); }

  /// The position of the entry whose `seq` is `seq`, or size() when none: a binary search,
  /// valid when the list is sorted by `seq` (the registry's is: registration order).
  std::size_t find_seq(std::uint64_t seq) const;

  /// Levels of the tree (0 when empty, 1 for one leaf): for tests.
  std::size_t height() const noexcept;

  /// A plain vector of the entries (tests, and callers that want one).
  std::vector<worker_entry_ptr> to_vector() const { return {begin(), end()}; }

private:
  node_ptr root_;
};

} // namespace troupe::actors
