#include "services/metric_children.hpp"

#include <catch2/catch.hpp>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <string>

using namespace troupe::services::detail;

namespace {

/// A counter family and its child cache, labelled `endpoint` and `model`.
struct counters {
  prom::Registry registry;
  prom::Family<prom::Counter>& family =
      prom::BuildCounter().Name("test_total").Help("test").Register(registry);
  child_cache<prom::Counter> cache{{"endpoint", "model"}, adder(family)};
};

/// The value of `family`'s child with exactly these labels, or -1 when it has none.
double value_of(prom::Registry& registry, const std::string& endpoint, const std::string& model) {
  for (auto& f : registry.Collect()) {
    for (auto& m : f.metric) {
      std::string e, mo;
      for (auto& l : m.label) {
        (l.name == "endpoint" ? e : mo) = l.value;
      }
      if (e == endpoint && mo == model) {
        return m.counter.value;
      }
    }
  }
  return -1;
}

} // namespace

TEST_CASE("a child cache finds the child of each label set, whichever it looked up last") {
  counters c;
  auto& a = c.cache.get({"chat", "llama"});
  auto& b = c.cache.get({"chat", "qwen"});
  CHECK(&a != &b);
  // Alternating sets: the remembered last set must never answer for another.
  for (int i = 0; i < 3; ++i) {
    c.cache.get({"chat", "llama"}).Increment();
    c.cache.get({"chat", "qwen"}).Increment(2);
    c.cache.get({"chat", "qwen"}).Increment(2);
  }
  CHECK(&c.cache.get({"chat", "llama"}) == &a);
  CHECK(&c.cache.get({"chat", "qwen"}) == &b);
  CHECK(value_of(c.registry, "chat", "llama") == 3);
  CHECK(value_of(c.registry, "chat", "qwen") == 12);
}

TEST_CASE("a child cache tells label sets apart where their joined text is alike") {
  counters c;
  auto& ab_c = c.cache.get({"ab", "c"});
  auto& a_bc = c.cache.get({"a", "bc"});
  CHECK(&ab_c != &a_bc);
  CHECK(&c.cache.get({"ab", "c"}) == &ab_c); // right after the other set, and again
  CHECK(&c.cache.get({"ab", "c"}) == &ab_c);
  CHECK(&c.cache.get({"a", "bc"}) == &a_bc);
}

TEST_CASE("a child cache counts label sets past its limit under `other`") {
  counters c;
  for (std::size_t i = 0; i < max_label_sets; ++i) {
    c.cache.get({"chat", "model-" + std::to_string(i)});
  }
  auto& first = c.cache.get({"chat", "model-0"}); // known: its own child
  auto& late = c.cache.get({"chat", "one-too-many"});
  auto& later = c.cache.get({"embeddings", "another"});
  CHECK(&late == &later);
  CHECK(&late != &first);
  late.Increment();
  CHECK(value_of(c.registry, "other", "other") == 1);
  CHECK(&c.cache.get({"chat", "model-0"}) == &first);
}
