#include "actors/policies/radix_tree.hpp"

#include "actors/policies/flat_map.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>

namespace troupe::actors {

struct radix_tree::node {
  std::string edge; ///< Bytes from the parent to this node (empty for the root only).
  node* parent = nullptr;
  std::string keys; ///< First byte of each child's edge, in the order of `children`.
  std::vector<node*> children;
  std::vector<std::uint32_t> marks; ///< Indices into `marks_`; one per tenant at most.
  /// Tenant -> its mark here, once the node has `indexed_from` marks (a prefix thousands of
  /// workers hold): finding a tenant's mark stays O(1) instead of a scan of all of them. Flat
  /// (one slot read per lookup, where a hash map of nodes reads two cold lines): a pick's match
  /// looks up each scored tenant on each node its bisection visits.
  std::unique_ptr<flat_map<tenant, std::uint32_t>> by_owner;
};

namespace {
/// Marks on one node from which a lookup by tenant goes through an index: below it a scan of
/// the few marks is cheaper than a hash.
constexpr std::size_t indexed_from = 16;
} // namespace

namespace {

/// Length of the common prefix of `a` and `b`. Runs of equal bytes are skipped by `memcmp`
/// (vectorized by the C library): the whole of it at once (an edge walked through, the common
/// case), else in blocks, shorter ones, then eight bytes at a time in the block that differs.
std::size_t common_prefix(std::string_view a, std::string_view b) noexcept {
  auto n = std::min(a.size(), b.size());
  if (std::memcmp(a.data(), b.data(), n) == 0) {
    return n;
  }
  std::size_t i = 0;
  for (std::size_t block : {std::size_t{256}, std::size_t{32}}) {
    while (i + block <= n && std::memcmp(a.data() + i, b.data() + i, block) == 0) {
      i += block;
    }
  }
  if constexpr (std::endian::native == std::endian::little) {
    for (; i + 8 <= n; i += 8) {
      std::uint64_t x;
      std::uint64_t y;
      std::memcpy(&x, a.data() + i, 8);
      std::memcpy(&y, b.data() + i, 8);
      if (x != y) {
        return i + static_cast<std::size_t>(std::countr_zero(x ^ y) / 8);
      }
    }
  }
  while (i < n && a[i] == b[i]) {
    ++i;
  }
  return i;
}

} // namespace

radix_tree::radix_tree() : root_(new node) {}

radix_tree::~radix_tree() {
  // Iteratively: a tree of long chains would overflow the stack of a recursive destructor.
  std::vector<node*> todo{root_};
  while (!todo.empty()) {
    auto* n = todo.back();
    todo.pop_back();
    todo.insert(todo.end(), n->children.begin(), n->children.end());
    delete n;
  }
}

// -- queries --

void radix_tree::match_each(std::string_view text, const std::vector<char>& eligible,
                            std::vector<std::size_t>& lengths) const {
  lengths.assign(eligible.size(), 0);
  match_each(
      text, [&](tenant t) { return t < eligible.size() && eligible[t]; },
      [&](tenant t, std::size_t length) { lengths[t] = length; });
}

void radix_tree::match_each(std::string_view text, const std::function<bool(tenant)>& eligible,
                            const std::function<void(tenant, std::size_t)>& held) const {
  const node* n = root_;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const node* c = child(n, static_cast<unsigned char>(text[pos]));
    if (!c) {
      break;
    }
    auto common = common_prefix(c->edge, text.substr(pos));
    bool any = false;
    for (auto m : c->marks) {
      auto t = marks_[m].owner;
      if (eligible(t)) {
        held(t, pos + common); // marks are monotone: deeper nodes only lengthen it
        any = true;
      }
    }
    // Below a node no eligible tenant holds, none does.
    if (!any || common < c->edge.size()) {
      break;
    }
    pos += common;
    n = c;
  }
}

void radix_tree::match_each(std::string_view text, const std::vector<tenant>& tenants,
                            const std::function<void(tenant, std::size_t)>& held) const {
  walk_.clear();
  const node* n = root_;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const node* c = child(n, static_cast<unsigned char>(text[pos]));
    if (!c) {
      break;
    }
    auto common = common_prefix(c->edge, text.substr(pos));
    walk_.emplace_back(c, pos + common);
    if (common < c->edge.size()) {
      break;
    }
    pos += common;
    n = c;
  }
  if (walk_.empty()) {
    return;
  }
  for (auto t : tenants) {
    // Marks are monotone: the nodes of the path `t` marks are a prefix of it; the deepest is
    // found by bisection.
    if (find_mark(walk_.front().first, t) == nil) {
      continue;
    }
    std::size_t lo = 0; // marked
    std::size_t hi = walk_.size();
    while (hi - lo > 1) {
      auto mid = lo + (hi - lo) / 2;
      if (find_mark(walk_[mid].first, t) != nil) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    held(t, walk_[lo].second);
  }
}

std::size_t radix_tree::match(std::string_view text, const std::vector<char>& eligible,
                              std::vector<tenant>& holders) const {
  return match(
      text, [&](tenant t) { return t < eligible.size() && eligible[t]; }, holders);
}

std::size_t radix_tree::match(std::string_view text, const std::function<bool(tenant)>& eligible,
                              std::vector<tenant>& holders, std::size_t max_holders) const {
  holders.clear();
  auto accepted = [&](const node* n) {
    for (auto m : n->marks) {
      if (eligible(marks_[m].owner)) {
        return true;
      }
    }
    return false;
  };
  const node* n = root_;
  const node* best = nullptr;
  std::size_t best_len = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const node* c = child(n, static_cast<unsigned char>(text[pos]));
    // Marks are monotone: below a node no eligible tenant holds, none does.
    if (!c || !accepted(c)) {
      break;
    }
    auto common = common_prefix(c->edge, text.substr(pos));
    best = c;
    best_len = pos + common;
    if (common < c->edge.size()) {
      break;
    }
    pos += common;
    n = c;
  }
  if (best) {
    for (auto m : best->marks) {
      auto t = marks_[m].owner;
      if (eligible(t)) {
        holders.push_back(t);
        if (holders.size() >= max_holders) {
          break;
        }
      }
    }
  }
  return best_len;
}

std::size_t radix_tree::size(tenant t) const noexcept {
  return t < tenants_.size() ? tenants_[t].bytes : 0;
}

// -- updates --

void radix_tree::insert(std::string_view text, tenant t, std::size_t max_bytes) {
  state_of(t);
  path_.clear();
  node* n = root_;
  std::size_t pos = 0;
  while (pos < text.size()) {
    node* c = child(n, static_cast<unsigned char>(text[pos]));
    if (!c) {
      path_.push_back(add_leaf(n, text.substr(pos)));
      break;
    }
    auto common = common_prefix(c->edge, text.substr(pos));
    if (common < c->edge.size()) {
      c = split(c, common);
    }
    path_.push_back(c);
    pos += common;
    n = c;
  }
  // Deepest first, each to the front: the list then runs shallow to deep, so a node's
  // descendants are always behind it and the tail is a leaf.
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    touch(*it, t);
  }
  evict(t, max_bytes);
}

void radix_tree::evict(tenant t, std::size_t max_bytes) {
  if (t >= tenants_.size()) {
    return;
  }
  auto& s = tenants_[t];
  while (s.bytes > max_bytes && s.tail != nil) {
    drop(s.tail);
  }
}

void radix_tree::remove(tenant t) {
  evict(t, 0);
}

// -- internals --

radix_tree::tenant_state& radix_tree::state_of(tenant t) {
  if (t >= tenants_.size()) {
    tenants_.resize(t + 1, tenant_state{nil, nil, 0});
  }
  return tenants_[t];
}

radix_tree::node* radix_tree::child(const node* n, unsigned char first) const noexcept {
  auto* hit = std::memchr(n->keys.data(), first, n->keys.size());
  if (!hit) {
    return nullptr;
  }
  return n->children[static_cast<std::size_t>(static_cast<const char*>(hit) - n->keys.data())];
}

radix_tree::node* radix_tree::add_leaf(node* parent, std::string_view edge) {
  auto* leaf = new node;
  leaf->edge.assign(edge);
  leaf->parent = parent;
  parent->keys.push_back(edge.front());
  parent->children.push_back(leaf);
  ++nodes_;
  return leaf;
}

// Puts a new node holding the first `at` bytes of `c`'s edge between `c` and its parent. The
// new node carries `c`'s marks, each placed just ahead of `c`'s in its tenant's list (an
// ancestor ahead of its descendants); byte counts do not change.
radix_tree::node* radix_tree::split(node* c, std::size_t at) {
  auto* p = c->parent;
  auto* m = new node;
  m->edge.assign(c->edge, 0, at);
  m->parent = p;
  auto slot = static_cast<std::size_t>(
      static_cast<const char*>(std::memchr(p->keys.data(), c->edge.front(), p->keys.size())) -
      p->keys.data());
  p->children[slot] = m;
  c->edge.erase(0, at);
  c->parent = m;
  m->keys.push_back(c->edge.front());
  m->children.push_back(c);
  for (auto cm : c->marks) {
    auto nm = new_mark(m, marks_[cm].owner);
    link_before(nm, cm);
  }
  ++nodes_;
  return m;
}

std::uint32_t radix_tree::find_mark(const node* n, tenant t) const noexcept {
  if (n->by_owner) {
    auto* m = n->by_owner->find(t);
    return m ? *m : nil;
  }
  for (auto m : n->marks) {
    if (marks_[m].owner == t) {
      return m;
    }
  }
  return nil;
}

std::uint32_t radix_tree::new_mark(node* n, tenant t) {
  std::uint32_t m;
  if (!free_marks_.empty()) {
    m = free_marks_.back();
    free_marks_.pop_back();
  } else {
    m = static_cast<std::uint32_t>(marks_.size());
    marks_.emplace_back();
  }
  marks_[m] = mark{n, t, nil, nil, static_cast<std::uint32_t>(n->marks.size())};
  n->marks.push_back(m);
  if (n->by_owner) {
    n->by_owner->insert_or_assign(t, m);
  } else if (n->marks.size() >= indexed_from) {
    n->by_owner = std::make_unique<flat_map<tenant, std::uint32_t>>();
    for (auto x : n->marks) {
      n->by_owner->insert_or_assign(marks_[x].owner, x);
    }
  }
  return m;
}

void radix_tree::link_front(std::uint32_t m) {
  auto& s = tenants_[marks_[m].owner];
  marks_[m].prev = nil;
  marks_[m].next = s.head;
  if (s.head != nil) {
    marks_[s.head].prev = m;
  } else {
    s.tail = m;
  }
  s.head = m;
}

void radix_tree::link_before(std::uint32_t m, std::uint32_t before) {
  auto& s = tenants_[marks_[m].owner];
  auto prev = marks_[before].prev;
  marks_[m].prev = prev;
  marks_[m].next = before;
  marks_[before].prev = m;
  if (prev != nil) {
    marks_[prev].next = m;
  } else {
    s.head = m;
  }
}

void radix_tree::unlink(std::uint32_t m) {
  auto& s = tenants_[marks_[m].owner];
  auto [prev, next] = std::pair{marks_[m].prev, marks_[m].next};
  (prev != nil ? marks_[prev].next : s.head) = next;
  (next != nil ? marks_[next].prev : s.tail) = prev;
}

void radix_tree::touch(node* n, tenant t) {
  auto m = find_mark(n, t);
  if (m != nil) {
    unlink(m);
  } else {
    m = new_mark(n, t);
    tenants_[t].bytes += n->edge.size();
  }
  link_front(m);
}

// Removes mark `m`, which is the tail of its tenant's list: its node has no descendant that
// tenant marks. A node left without marks has no children either (marks are monotone) and goes.
void radix_tree::drop(std::uint32_t m) {
  auto* n = marks_[m].at;
  unlink(m);
  tenants_[marks_[m].owner].bytes -= n->edge.size();
  // Out of the node's marks in O(1): the last one takes its slot.
  auto slot = marks_[m].slot;
  auto last = n->marks.back();
  n->marks[slot] = last;
  marks_[last].slot = slot;
  n->marks.pop_back();
  if (n->by_owner) {
    n->by_owner->erase(marks_[m].owner);
  }
  free_marks_.push_back(m);
  if (n->marks.empty()) {
    erase_leaf(n);
  }
}

void radix_tree::erase_leaf(node* n) {
  auto* p = n->parent;
  auto slot = static_cast<std::size_t>(
      static_cast<const char*>(std::memchr(p->keys.data(), n->edge.front(), p->keys.size())) -
      p->keys.data());
  p->keys.erase(slot, 1);
  p->children.erase(p->children.begin() + static_cast<std::ptrdiff_t>(slot));
  delete n;
  --nodes_;
}

} // namespace troupe::actors
