#pragma once

// The labelled children of a metric family, cached (services/metrics.cpp): the hot path finds a
// child under a shared lock instead of hashing a fresh label map in prometheus' `Family::Add`.

#include "protocol/string_hash.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <initializer_list>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace troupe::services::detail {

namespace prom = prometheus;

/// Label sets kept per family; further ones count under `other`.
constexpr std::size_t max_label_sets = 512;

/// Joins label values into one lookup key without allocating for the usual short ones.
class label_key {
public:
  explicit label_key(std::initializer_list<std::string_view> values) {
    std::size_t need = 0;
    for (auto v : values) {
      need += v.size() + 1;
    }
    char* out = need <= buf_.size() ? buf_.data() : (heap_.resize(need), heap_.data());
    std::size_t n = 0;
    for (auto v : values) {
      std::copy(v.begin(), v.end(), out + n);
      n += v.size();
      out[n++] = '\x1f'; // unit separator: not in any label value we produce
    }
    view_ = {out, n};
  }

  std::string_view view() const noexcept { return view_; }

private:
  std::array<char, 192> buf_;
  std::string heap_;
  std::string_view view_;
};

/// The children of one labelled family, created on first use and cached: the hot path looks a
/// child up under a shared lock instead of hashing a fresh label map in `Family::Add`.
template <class T> class child_cache {
public:
  using factory = std::function<T&(const prom::Labels&)>;

  child_cache(std::vector<std::string> names, factory make)
      : names_(std::move(names)), make_(std::move(make)) {}

  T& get(std::initializer_list<std::string_view> values) {
    label_key key{values};
    // The label set of the last lookup first: on a gateway serving one model, nearly every
    // request names it again, and comparing ~30 bytes is cheaper than hashing them and
    // taking the lock. An entry of the map never moves nor goes, so the pointer stays valid.
    if (auto* last = last_.load(std::memory_order_acquire);
        last != nullptr && last->first == key.view()) {
      return *last->second;
    }
    {
      std::shared_lock guard{mx_};
      if (auto it = children_.find(key.view()); it != children_.end()) {
        last_.store(&*it, std::memory_order_release);
        return *it->second;
      }
    }
    std::unique_lock guard{mx_};
    if (auto it = children_.find(key.view()); it != children_.end()) {
      return *it->second;
    }
    prom::Labels labels;
    bool full = children_.size() >= max_label_sets;
    auto v = values.begin();
    for (auto& name : names_) {
      labels.emplace(name, full ? std::string{"other"} : std::string(*v++));
    }
    if (full) {
      if (!overflow_) {
        overflow_ = &make_(labels);
      }
      return *overflow_;
    }
    T* child = &make_(labels);
    children_.emplace(std::string(key.view()), child);
    return *child;
  }

private:
  std::vector<std::string> names_;
  factory make_;
  std::shared_mutex mx_;
  std::unordered_map<std::string, T*, protocol::string_hash, std::equal_to<>> children_;
  std::atomic<const typename decltype(children_)::value_type*> last_{nullptr};
  T* overflow_ = nullptr;
};

/// A `child_cache` factory adding children to `family`.
template <class T> auto adder(prom::Family<T>& family) {
  return [&family](const prom::Labels& labels) -> T& { return family.Add(labels); };
}

/// A `child_cache` factory adding histograms with `buckets` to `family`.
inline auto histogram_adder(prom::Family<prom::Histogram>& family,
                            const prom::Histogram::BucketBoundaries& buckets) {
  return [&family, &buckets](const prom::Labels& labels) -> prom::Histogram& {
    return family.Add(labels, buckets);
  };
}

} // namespace troupe::services::detail
