#include "actors/policies/candidate_positions.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <deque>
#include <random>
#include <string>
#include <vector>

using troupe::actors::no_position;
using troupe::actors::position_of;
using troupe::actors::seq_lower_bound;
using troupe::actors::worker_entry;

namespace {

/// Candidate lists as the index builds them (sorted by registration order), with orders spread
/// evenly, skewed (a group of a few early and many late workers), in runs with gaps, and with
/// repeats (tests that do not number their workers).
std::vector<std::uint64_t> orders(std::mt19937_64& rng, int shape, std::size_t n) {
  std::vector<std::uint64_t> s;
  std::uint64_t x = rng() % 5;
  for (std::size_t i = 0; i < n; ++i) {
    switch (shape) {
    case 0: // every worker of the fleet
      x += 1;
      break;
    case 1: // a model's share of it
      x += 1 + rng() % 3;
      break;
    case 2: // skewed
      x += i < n / 10 ? 1 : 1000 + rng() % 7;
      break;
    case 3: // runs with gaps
      x += i % 50 == 0 ? 100000 : 1;
      break;
    default: // repeats
      x += rng() % 3 == 0 ? 1 : 0;
      break;
    }
    s.push_back(x);
  }
  return s;
}

} // namespace

TEST_CASE("candidate positions: the guided search agrees with std::lower_bound") {
  std::mt19937_64 rng{11};
  for (int shape = 0; shape < 5; ++shape) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7},
                          std::size_t{100}, std::size_t{4000}}) {
      std::deque<worker_entry> entries(n);
      std::vector<const worker_entry*> cands;
      auto seqs = orders(rng, shape, n);
      for (std::size_t i = 0; i < n; ++i) {
        entries[i].seq = seqs[i];
        entries[i].id = "w-" + std::to_string(i);
        cands.push_back(&entries[i]);
      }
      auto reference = [&](std::uint64_t seq) {
        return static_cast<std::size_t>(std::lower_bound(seqs.begin(), seqs.end(), seq) -
                                        seqs.begin());
      };
      // Every order present, its neighbours, and orders before the first and past the last.
      std::vector<std::uint64_t> asks{0, 1, seqs.empty() ? 3 : seqs.back() + 1, UINT64_MAX};
      for (auto s : seqs) {
        asks.push_back(s);
        asks.push_back(s + 1);
        asks.push_back(s == 0 ? 0 : s - 1);
      }
      for (int i = 0; i < 200; ++i) {
        asks.push_back(rng() % (seqs.empty() ? 10 : seqs.back() + 10));
      }
      for (auto s : asks) {
        INFO("shape " << shape << " n " << n << " seq " << s);
        REQUIRE(seq_lower_bound(cands, s) == reference(s));
      }
      // Every candidate is found where it is, by pointer and by (order, id), repeats and all.
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(position_of(cands, &entries[i]) == i);
        REQUIRE(position_of(cands, entries[i].seq, entries[i].id) == i);
      }
    }
  }
}

TEST_CASE("candidate positions: a worker not in the list has no position") {
  std::deque<worker_entry> entries(50);
  std::vector<const worker_entry*> cands;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].seq = 2 * i + 1;
    entries[i].id = "w-" + std::to_string(i);
    if (i % 5 != 0) {
      cands.push_back(&entries[i]);
    }
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto expected = i % 5 == 0 ? no_position : i - i / 5 - 1;
    CHECK(position_of(cands, &entries[i]) == expected);
    CHECK(position_of(cands, entries[i].seq, entries[i].id) == expected);
  }
  // Same order, other worker (registered again since): not the one in the list.
  worker_entry again;
  again.seq = entries[1].seq;
  again.id = "w-other";
  CHECK(position_of(cands, &again) == no_position);
  CHECK(position_of(cands, again.seq, again.id) == no_position);
  CHECK(position_of(cands, nullptr) == no_position);
}
