#include "actors/worker_list.hpp"

#include "actors/fleet.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace troupe::actors {

/// A leaf holds entries, an inner node children of equal height. Immutable once shared.
struct worker_list::node {
  bool leaf = true;
  std::size_t count = 0;      ///< Entries below.
  std::uint64_t last_seq = 0; ///< `seq` of the last entry below (the lists are sorted by it).
  std::vector<node_ptr> kids; ///< Inner node: children, in order.
  std::vector<worker_entry_ptr> entries; ///< Leaf: entries, in order.

  std::size_t width() const noexcept { return leaf ? entries.size() : kids.size(); }
};

namespace {

template <class Node> void refresh(Node& n) {
  if (n.leaf) {
    n.count = n.entries.size();
    n.last_seq = n.entries.empty() ? 0 : n.entries.back()->seq;
    return;
  }
  n.count = 0;
  for (auto& k : n.kids) {
    n.count += k->count;
  }
  n.last_seq = n.kids.empty() ? 0 : n.kids.back()->last_seq;
}

/// The child of inner node `n` holding position `i`; `i` becomes the position within it.
template <class Node> std::size_t child_at(const Node& n, std::size_t& i) {
  std::size_t k = 0;
  while (i >= n.kids[k]->count) {
    i -= n.kids[k]->count;
    ++k;
  }
  return k;
}

} // namespace

// -- the tree's edits: each copies the nodes on one path and shares the rest --

namespace {

template <class Node, class Ptr = std::shared_ptr<const Node>>
std::pair<Ptr, Ptr> append(const Ptr& n, worker_entry_ptr w, std::size_t fanout) {
  if (n->leaf) {
    if (n->entries.size() < fanout) {
      auto c = std::make_shared<Node>(*n);
      c->entries.push_back(std::move(w));
      refresh(*c);
      return {std::move(c), nullptr};
    }
    auto s = std::make_shared<Node>();
    s->entries.reserve(fanout);
    s->entries.push_back(std::move(w));
    refresh(*s);
    return {n, std::move(s)};
  }
  auto [last, extra] = append<Node>(n->kids.back(), std::move(w), fanout);
  auto c = std::make_shared<Node>(*n);
  c->kids.back() = std::move(last);
  Ptr sibling;
  if (extra && c->kids.size() < fanout) {
    c->kids.push_back(std::move(extra));
  } else if (extra) {
    auto s = std::make_shared<Node>();
    s->leaf = false;
    s->kids.push_back(std::move(extra));
    refresh(*s);
    sibling = std::move(s);
  }
  refresh(*c);
  return {std::move(c), std::move(sibling)};
}

template <class Node, class Ptr = std::shared_ptr<const Node>>
Ptr assign(const Ptr& n, std::size_t i, worker_entry_ptr w) {
  auto c = std::make_shared<Node>(*n);
  if (c->leaf) {
    c->entries[i] = std::move(w);
  } else {
    auto k = child_at(*c, i);
    c->kids[k] = assign<Node>(c->kids[k], i, std::move(w));
  }
  refresh(*c);
  return c;
}

/// Children `k` and `k + 1` of `c` as one, when they fit in one node.
template <class Node> void merge_pair(Node& c, std::size_t k, std::size_t fanout) {
  auto& a = *c.kids[k];
  auto& b = *c.kids[k + 1];
  if (a.width() + b.width() > fanout) {
    return;
  }
  auto m = std::make_shared<Node>(a);
  if (m->leaf) {
    m->entries.insert(m->entries.end(), b.entries.begin(), b.entries.end());
  } else {
    m->kids.insert(m->kids.end(), b.kids.begin(), b.kids.end());
  }
  refresh(*m);
  c.kids[k] = std::move(m);
  c.kids.erase(c.kids.begin() + static_cast<std::ptrdiff_t>(k) + 1);
}

template <class Node, class Ptr = std::shared_ptr<const Node>>
Ptr remove(const Ptr& n, std::size_t i, std::size_t fanout) {
  auto c = std::make_shared<Node>(*n);
  if (c->leaf) {
    c->entries.erase(c->entries.begin() + static_cast<std::ptrdiff_t>(i));
  } else {
    auto k = child_at(*c, i);
    auto kid = remove<Node>(c->kids[k], i, fanout);
    if (kid->width() == 0) {
      c->kids.erase(c->kids.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      bool small = kid->width() < fanout / 4;
      c->kids[k] = std::move(kid);
      // A child left small joins a neighbour: churn cannot leave a tree of thin leaves.
      if (small && k + 1 < c->kids.size()) {
        merge_pair(*c, k, fanout);
      } else if (small && k > 0) {
        merge_pair(*c, k - 1, fanout);
      }
    }
  }
  refresh(*c);
  return c;
}

} // namespace

worker_list::worker_list(const std::vector<worker_entry_ptr>& entries) {
  std::vector<node_ptr> level;
  for (std::size_t at = 0; at < entries.size(); at += fanout) {
    auto leaf = std::make_shared<node>();
    auto to = std::min(entries.size(), at + fanout);
    leaf->entries.assign(entries.begin() + static_cast<std::ptrdiff_t>(at),
                         entries.begin() + static_cast<std::ptrdiff_t>(to));
    refresh(*leaf);
    level.push_back(std::move(leaf));
  }
  while (level.size() > 1) {
    std::vector<node_ptr> up;
    for (std::size_t at = 0; at < level.size(); at += fanout) {
      auto inner = std::make_shared<node>();
      inner->leaf = false;
      auto to = std::min(level.size(), at + fanout);
      inner->kids.assign(level.begin() + static_cast<std::ptrdiff_t>(at),
                         level.begin() + static_cast<std::ptrdiff_t>(to));
      refresh(*inner);
      up.push_back(std::move(inner));
    }
    level = std::move(up);
  }
  if (!level.empty()) {
    root_ = std::move(level.front());
  }
}

std::size_t worker_list::size() const noexcept {
  return root_ ? root_->count : 0;
}

std::size_t worker_list::height() const noexcept {
  std::size_t h = 0;
  for (auto* n = root_.get(); n; n = n->leaf ? nullptr : n->kids.front().get()) {
    ++h;
  }
  return h;
}

const worker_entry_ptr& worker_list::operator[](std::size_t i) const {
  assert(i < size());
  const node* n = root_.get();
  while (!n->leaf) {
    n = n->kids[child_at(*n, i)].get();
  }
  return n->entries[i];
}

void worker_list::push_back(worker_entry_ptr w) {
  if (!root_) {
    auto leaf = std::make_shared<node>();
    leaf->entries.reserve(fanout);
    leaf->entries.push_back(std::move(w));
    refresh(*leaf);
    root_ = std::move(leaf);
    return;
  }
  auto [self, extra] = append<node>(root_, std::move(w), fanout);
  if (!extra) {
    root_ = std::move(self);
    return;
  }
  auto up = std::make_shared<node>();
  up->leaf = false;
  up->kids = {std::move(self), std::move(extra)};
  refresh(*up);
  root_ = std::move(up);
}

void worker_list::set(std::size_t i, worker_entry_ptr w) {
  assert(i < size());
  root_ = assign<node>(root_, i, std::move(w));
}

void worker_list::erase(std::size_t i) {
  assert(i < size());
  auto next = remove<node>(root_, i, fanout);
  // A root of one child gives way to it (the tree loses a level); an empty root goes.
  while (!next->leaf && next->kids.size() == 1) {
    next = next->kids.front();
  }
  if (next->width() == 0) {
    next.reset();
  }
  root_ = std::move(next);
}

std::size_t worker_list::find_seq(std::uint64_t seq) const {
  const node* n = root_.get();
  if (!n) {
    return 0;
  }
  std::size_t pos = 0;
  while (!n->leaf) {
    std::size_t k = 0;
    while (k < n->kids.size() && n->kids[k]->last_seq < seq) {
      pos += n->kids[k]->count;
      ++k;
    }
    if (k == n->kids.size()) {
      return size();
    }
    n = n->kids[k].get();
  }
  auto it = std::lower_bound(n->entries.begin(), n->entries.end(), seq,
                             [](const worker_entry_ptr& w, std::uint64_t s) { return w->seq < s; });
  if (it == n->entries.end() || (*it)->seq != seq) {
    return size();
  }
  return pos + static_cast<std::size_t>(it - n->entries.begin());
}

// -- iteration --

worker_list::const_iterator worker_list::begin() const {
  const_iterator it;
  if (root_) {
    it.descend(root_.get());
  }
  return it;
}

void worker_list::const_iterator::descend(const node* n) {
  for (;;) {
    path_[depth_++] = {n, 0};
    if (n->leaf) {
      return;
    }
    n = n->kids.front().get();
  }
}

worker_list::const_iterator::reference worker_list::const_iterator::operator*() const {
  auto& top = path_[depth_ - 1];
  return top.n->entries[top.i];
}

worker_list::const_iterator& worker_list::const_iterator::operator++() {
  auto& top = path_[depth_ - 1];
  if (++top.i < top.n->entries.size()) {
    return *this;
  }
  --depth_;
  while (depth_ > 0) {
    auto& s = path_[depth_ - 1];
    if (++s.i < s.n->kids.size()) {
      descend(s.n->kids[s.i].get());
      return *this;
    }
    --depth_;
  }
  return *this; // the end
}

} // namespace troupe::actors
