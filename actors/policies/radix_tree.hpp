#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// What the cache-aware policy believes each worker ("tenant") holds in its prefix cache: the
/// texts routed to it, in one radix tree over bytes shared by all tenants. Each node carries a
/// mark per tenant that inserted text through it, so a prefix every worker has seen (a common
/// system prompt) is stored once, and one walk down the tree matches a prompt against every
/// worker at once: O(prompt length), whatever the number of workers.
///
/// Marks are monotone (a node's tenants include its children's) and every tenant keeps its
/// marks in least-recently-used order with descendants behind their ancestors, so the tail of
/// a tenant's list is always one of its leaves: eviction costs O(1) per evicted node, and a
/// tenant can be trimmed to its budget on every insert instead of by a periodic sweep.
///
/// Single-threaded by design: one policy actor owns it.
class radix_tree {
public:
  /// A tenant: a small integer the owner assigns (the cache-aware policy: one per worker).
  using tenant = std::uint32_t;

  radix_tree();
  ~radix_tree();
  radix_tree(const radix_tree&) = delete;
  radix_tree& operator=(const radix_tree&) = delete;

  /// The length of the longest prefix of `text` that a tenant accepted by `eligible` (indexed
  /// by tenant; missing entries are not eligible) holds; `holders` is cleared and receives the
  /// eligible tenants holding all of it. 0 and no holders when none holds a byte of it.
  std::size_t match(std::string_view text, const std::vector<char>& eligible,
                    std::vector<tenant>& holders) const;

  /// As above, with eligibility asked of `eligible(tenant)`; at most `max_holders` holders are
  /// collected (a prefix every worker holds has one mark per worker).
  std::size_t match(std::string_view text, const std::function<bool(tenant)>& eligible,
                    std::vector<tenant>& holders, std::size_t max_holders = SIZE_MAX) const;

  /// For every tenant `eligible` accepts, the length of the longest prefix of `text` it holds,
  /// into `lengths` (indexed by tenant, resized to `eligible`'s size; 0 for the others). One
  /// walk, as `match`: O(prompt length + the marks on the path).
  void match_each(std::string_view text, const std::vector<char>& eligible,
                  std::vector<std::size_t>& lengths) const;

  /// As above for the tenants `eligible(tenant)` accepts, told to `held(tenant, length)` (once
  /// per node of the path a tenant marks, the deepest last; tenants holding none of `text` are
  /// not told): no work per tenant the walk does not meet.
  void match_each(std::string_view text, const std::function<bool(tenant)>& eligible,
                  const std::function<void(tenant, std::size_t)>& held) const;

  /// For each of `tenants` (a pick's few candidates, each once) holding some of `text`, the
  /// length of the longest prefix of it that tenant holds, told once to `held(tenant, length)`.
  /// O(path + tenants x log path): a prefix every one of 4,000 workers holds costs no more
  /// than one only a few hold, where the form above meets every mark on the path.
  void match_each(std::string_view text, const std::vector<tenant>& tenants,
                  const std::function<void(tenant, std::size_t)>& held) const;

  /// Records that `t` holds `text` now (its most recently used text), then evicts `t`'s least
  /// recently used text until it holds at most `max_bytes`.
  void insert(std::string_view text, tenant t, std::size_t max_bytes);

  /// Evicts `t`'s least recently used leaves until it holds at most `max_bytes`.
  void evict(tenant t, std::size_t max_bytes);

  /// Forgets all `t` holds (a worker that left the fleet).
  void remove(tenant t);

  /// Bytes of text `t` holds (the sum of the edges it marks).
  std::size_t size(tenant t) const noexcept;

  /// Nodes in the tree, root excluded.
  std::size_t node_count() const noexcept { return nodes_; }

  /// Marks in the tree (a node held by three tenants counts three).
  std::size_t mark_count() const noexcept { return marks_.size() - free_marks_.size(); }

private:
  struct node;

  /// One tenant's mark on one node, linked into the tenant's LRU list.
  struct mark {
    node* at = nullptr;
    tenant owner = 0;
    std::uint32_t prev = 0; ///< Towards the most recently used end.
    std::uint32_t next = 0; ///< Towards the least recently used end.
    std::uint32_t slot = 0; ///< Its place in its node's `marks`.
  };

  struct tenant_state {
    std::uint32_t head; ///< Most recently used mark, or `nil`.
    std::uint32_t tail; ///< Least recently used mark, or `nil`.
    std::size_t bytes = 0;
  };

  static constexpr std::uint32_t nil = UINT32_MAX;

  tenant_state& state_of(tenant t);
  node* child(const node* n, unsigned char first) const noexcept;
  node* add_leaf(node* parent, std::string_view edge);
  node* split(node* c, std::size_t at);
  std::uint32_t find_mark(const node* n, tenant t) const noexcept;
  std::uint32_t new_mark(node* n, tenant t);
  void link_front(std::uint32_t m);
  void link_before(std::uint32_t m, std::uint32_t before);
  void unlink(std::uint32_t m);
  void touch(node* n, tenant t);
  void drop(std::uint32_t m);
  void erase_leaf(node* n);

  node* root_;
  std::size_t nodes_ = 0;
  std::vector<mark> marks_;
  std::vector<std::uint32_t> free_marks_;
  std::vector<tenant_state> tenants_;
  std::vector<node*> path_; ///< Scratch of `insert`.
  /// Scratch of the list form of `match_each`: the nodes of the path and where each ends.
  mutable std::vector<std::pair<const node*, std::size_t>> walk_;
};

} // namespace troupe::actors
