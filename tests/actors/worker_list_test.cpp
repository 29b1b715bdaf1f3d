#include "actors/fleet.hpp"
#include "actors/worker_list.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using namespace troupe::actors;

namespace {

worker_entry_ptr entry(std::uint64_t seq) {
  auto w = std::make_shared<worker_entry>();
  w->seq = seq;
  w->id = "w" + std::to_string(seq);
  return w;
}

/// `list` holds what `plain` holds, in its order, by every way of reading it.
void check_same(const worker_list& list, const std::vector<worker_entry_ptr>& plain) {
  REQUIRE(list.size() == plain.size());
  CHECK(list.empty() == plain.empty());
  std::size_t i = 0;
  for (auto& w : list) {
    REQUIRE(i < plain.size());
    REQUIRE(w == plain[i]);
    ++i;
  }
  CHECK(i == plain.size());
  for (std::size_t k = 0; k < plain.size(); k += 1 + plain.size() / 50) {
    CHECK(list[k] == plain[k]);
    CHECK(list.find_seq(plain[k]->seq) == k);
  }
}

} // namespace

TEST_CASE("worker list: agrees with a plain vector under random adds, removes and swaps") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng{seed};
    worker_list list;
    std::vector<worker_entry_ptr> plain;
    // Versions kept along the way: a write must not change a copy taken before it.
    std::vector<std::pair<worker_list, std::vector<worker_entry_ptr>>> kept;
    std::uint64_t seq = 0;
    for (int step = 0; step < 20000; ++step) {
      auto op = rng() % 10;
      if (plain.empty() || op < 5 - (plain.size() > 3000 ? 2 : 0)) {
        auto w = entry(++seq);
        list.push_back(w);
        plain.push_back(w);
      } else if (op < 8) {
        auto at = rng() % plain.size();
        list.erase(at);
        plain.erase(plain.begin() + static_cast<std::ptrdiff_t>(at));
      } else {
        // A new model card: a new entry of the same seq at the same place.
        auto at = rng() % plain.size();
        auto w = entry(plain[at]->seq);
        list.set(at, w);
        plain[at] = w;
      }
      if (step % 997 == 0) {
        kept.emplace_back(list, plain);
      }
      if (step % 211 == 0) {
        check_same(list, plain);
        // Thin leaves join their neighbours: the tree stays about as low as a full one.
        auto full = plain.empty() ? 0 : std::ceil(std::log(plain.size()) / std::log(32.0));
        CHECK(list.height() <= static_cast<std::size_t>(full) + 2);
      }
    }
    check_same(list, plain);
    for (auto& [l, p] : kept) {
      check_same(l, p);
    }
    CHECK(list.find_seq(seq + 1) == list.size());
  }
}

TEST_CASE("worker list: built from a vector, emptied, and a miss by seq") {
  std::vector<worker_entry_ptr> plain;
  for (std::uint64_t s = 1; s <= 5000; ++s) {
    plain.push_back(entry(2 * s)); // even seqs only
  }
  worker_list list{plain};
  check_same(list, plain);
  CHECK(list.height() == 3); // 5000 entries: 157 leaves, 5 inner nodes, a root
  CHECK(list.find_seq(3) == list.size());
  CHECK(list.front() == plain.front());
  CHECK(list.back() == plain.back());
  CHECK(list.to_vector() == plain);
  auto copy = list;
  while (!list.empty()) {
    list.erase(list.size() / 2);
  }
  CHECK(list.height() == 0);
  CHECK(list.begin() == list.end());
  check_same(copy, plain);
  CHECK(worker_list{}.find_seq(1) == 0);
}
