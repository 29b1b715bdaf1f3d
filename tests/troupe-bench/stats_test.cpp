#include "apps/troupe-bench/stats.hpp"

#include <catch2/catch.hpp>

using namespace troupe::bench;

TEST_CASE("percentiles interpolate between the closest ranks", "[stats]") {
  sample_set s;
  // Added out of order: the set sorts before it looks.
  for (int v : {7, 3, 10, 1, 5, 9, 2, 8, 4, 6}) {
    s.add(v);
  }
  // numpy.percentile([1..10], p) with the default linear method.
  CHECK(s.percentile(0) == Approx(1));
  CHECK(s.percentile(50) == Approx(5.5));
  CHECK(s.percentile(90) == Approx(9.1));
  CHECK(s.percentile(99) == Approx(9.91));
  CHECK(s.percentile(100) == Approx(10));
  CHECK(s.mean() == Approx(5.5));
}

TEST_CASE("a summary holds count, mean, extremes and p50/p90/p99", "[stats]") {
  sample_set s;
  for (int v = 1; v <= 100; ++v) {
    s.add(v);
  }
  auto sum = s.summarize();
  CHECK(sum.count == 100);
  CHECK(sum.mean == Approx(50.5));
  CHECK(sum.min == 1);
  CHECK(sum.max == 100);
  CHECK(sum.p50 == Approx(50.5));
  CHECK(sum.p90 == Approx(90.1));
  CHECK(sum.p99 == Approx(99.01));
}

TEST_CASE("one sample is every percentile; no sample is all zeros", "[stats]") {
  sample_set one;
  one.add(42);
  auto s = one.summarize();
  CHECK(s.p50 == 42);
  CHECK(s.p99 == 42);
  CHECK(s.min == 42);
  sample_set none;
  auto z = none.summarize();
  CHECK(z.count == 0);
  CHECK(z.p99 == 0);
  CHECK(none.percentile(50) == 0);
}

TEST_CASE("adding after a percentile was read keeps the answers right", "[stats]") {
  sample_set s;
  s.add(10);
  s.add(20);
  CHECK(s.percentile(50) == Approx(15));
  s.add(0);
  CHECK(s.percentile(50) == Approx(10));
  CHECK(s.percentile(0) == 0);
}

TEST_CASE("merging two sets equals adding every sample to one", "[stats]") {
  sample_set a, b, all;
  for (int i = 0; i < 50; ++i) {
    a.add(i * 3 % 17);
    all.add(i * 3 % 17);
    b.add(i * 7 % 23);
    all.add(i * 7 % 23);
  }
  a.merge(b);
  CHECK(a.count() == all.count());
  CHECK(a.mean() == Approx(all.mean()));
  for (double p : {1.0, 25.0, 50.0, 90.0, 99.0}) {
    CHECK(a.percentile(p) == Approx(all.percentile(p)));
  }
}
