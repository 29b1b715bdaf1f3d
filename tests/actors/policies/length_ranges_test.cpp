#include "actors/policies/length_ranges.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace troupe::actors;

namespace {

/// The ranges cover 0..unbounded exactly, in order, one per owner of `alive`.
void check_cover(const length_ranges& r, const std::set<std::string>& alive) {
  auto list = r.list();
  REQUIRE(list.size() == alive.size());
  REQUIRE(r.size() == alive.size());
  std::set<std::string> owners;
  std::size_t next = 0;
  for (auto& x : list) {
    REQUIRE(x.from == next);
    REQUIRE(x.from <= x.to);
    owners.insert(x.who->id);
    next = x.to + 1; // wraps to 0 after the last, checked below
  }
  if (!list.empty()) {
    CHECK(list.back().to == length_ranges::unbounded);
  }
  CHECK(owners == alive);
}

/// The owner of each probed length (0..3 x span, and a huge one).
std::map<std::size_t, std::string> owners_of(const length_ranges& r) {
  std::map<std::size_t, std::string> out;
  auto list = r.list();
  for (std::size_t len = 0; len < 3 * 4096; len += 13) {
    for (auto& x : list) {
      if (len >= x.from && len <= x.to) {
        out[len] = x.who->id;
        break;
      }
    }
  }
  out[std::size_t{1} << 40] = list.empty() ? "" : list.back().who->id;
  return out;
}

} // namespace

TEST_CASE("length ranges: even slices at first, the last one open-ended") {
  length_ranges r{4096};
  r.reset({{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}});
  auto list = r.list();
  REQUIRE(list.size() == 4);
  CHECK(list[1].from == 1024);
  CHECK(list[1].to == 2047);
  CHECK(list[3].who->id == "d");
  check_cover(r, {"a", "b", "c", "d"});
}

TEST_CASE("length ranges: a removed worker's range goes to its neighbours") {
  length_ranges r{4096};
  r.reset({{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}});
  REQUIRE(r.remove("b")); // [1024, 2047]: half to a, half to c
  auto list = r.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].to == 1535);
  CHECK(list[1].who->id == "c");
  CHECK(list[1].from == 1536);
  CHECK(list[1].to == 3071);
  REQUIRE(r.remove("d")); // the last: c is open-ended now
  CHECK(r.list().back().to == length_ranges::unbounded);
  CHECK(r.list().back().who->id == "c");
  REQUIRE(r.remove("a")); // the first: c starts at 0
  CHECK(r.list().front().from == 0);
  CHECK_FALSE(r.remove("a"));
  check_cover(r, {"c"});
}

TEST_CASE("length ranges: an added worker takes the upper half of the widest range") {
  length_ranges r{4096};
  r.reset({{"a", 1}, {"b", 2}}); // [0, 2047], [2048, ..)
  r.add({"c", 3}); // a tie with the open range (counted as 2048 wide): the open one is split
  auto list = r.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].to == 2047);
  CHECK(list[1].who->id == "b");
  CHECK(list[1].to == 3071);
  CHECK(list[2].who->id == "c");
  r.add({"d", 4}); // a's 2048 is now the widest (the open one counts 1536)
  list = r.list();
  CHECK(list[0].who->id == "a");
  CHECK(list[0].to == 1023);
  CHECK(list[1].who->id == "d");
  CHECK(list[1].to == 2047);
  r.add({"d", 4}); // already there: no change
  check_cover(r, {"a", "b", "c", "d"});
}

TEST_CASE("length ranges: under random churn they cover the space, and staying workers keep "
          "their lengths") {
  for (std::uint64_t seed : {5u, 6u, 7u}) {
    std::mt19937_64 rng{seed};
    length_ranges r{4096};
    std::set<std::string> alive;
    std::vector<length_ranges::owner> start;
    for (int i = 0; i < 40; ++i) {
      start.push_back({"w" + std::to_string(i), static_cast<std::uint64_t>(i)});
      alive.insert(start.back().id);
    }
    r.reset(start);
    int next = 40;
    for (int step = 0; step < 2000; ++step) {
      auto before = owners_of(r);
      if (alive.size() > 1 && (rng() % 2 == 0 || alive.size() > 80)) {
        auto it = alive.begin();
        std::advance(it, static_cast<long>(rng() % alive.size()));
        auto gone = *it;
        alive.erase(it);
        REQUIRE(r.remove(gone));
        check_cover(r, alive);
        for (auto& [len, who] : owners_of(r)) {
          if (before[len] != gone) {
            REQUIRE(who == before[len]); // only the removed worker's lengths moved
          }
        }
      } else {
        auto id = "w" + std::to_string(next++);
        alive.insert(id);
        r.add({id, static_cast<std::uint64_t>(next)});
        check_cover(r, alive);
        std::set<std::string> losers; // lengths moved: all to the new one, from one worker

        for (auto& [len, who] : owners_of(r)) {
          if (who != before[len]) {
            REQUIRE(who == id);
            losers.insert(before[len]);
          }
        }
        CHECK(losers.size() <= 1);
      }
    }
  }
}

TEST_CASE("length ranges: a refit cuts at the given bounds, the owners in their order, and the "
          "next changes follow the new widths") {
  length_ranges r{4096};
  r.reset({{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}});
  r.refit({99, 199, 5000});
  auto list = r.list();
  REQUIRE(list.size() == 4);
  CHECK(list[0].who->id == "a");
  CHECK(list[0].to == 99);
  CHECK(list[1].from == 100);
  CHECK(list[1].to == 199);
  CHECK(list[2].who->id == "c");
  CHECK(list[2].to == 5000);
  CHECK(list[3].who->id == "d");
  CHECK(list[3].who->seq == 4);
  CHECK(list[3].from == 5001);
  CHECK(list[3].to == length_ranges::unbounded);
  check_cover(r, {"a", "b", "c", "d"});

  // The widest range is c's now (200..5000; the open one counts as 1,667): a newcomer takes
  // its upper half.
  r.add({"e", 5});
  list = r.list();
  REQUIRE(list.size() == 5);
  CHECK(list[2].who->id == "c");
  CHECK(list[2].to == 2599);
  CHECK(list[3].who->id == "e");
  CHECK(list[3].from == 2600);
  CHECK(list[3].to == 5000);

  // Each owner is found under its new bound: b's 100..199 goes half to a, half to c.
  REQUIRE(r.remove("b"));
  CHECK_FALSE(r.contains("b"));
  list = r.list();
  REQUIRE(list.size() == 4);
  CHECK(list[0].to == 149);
  CHECK(list[1].who->id == "c");
  CHECK(list[1].from == 150);
  REQUIRE(r.remove("d"));
  CHECK(r.list().back().who->id == "e");
  CHECK(r.list().back().to == length_ranges::unbounded);
  check_cover(r, {"a", "c", "e"});

  // Refit again, with fewer owners than before: the same nodes, no stale width left.
  r.refit({3000, 3010});
  list = r.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].to == 3000);
  CHECK(list[1].to == 3010);
  // Widest: a's 3,001 (c's is 10, the open one counts as 1,505): f takes 1500..3000.
  r.add({"f", 6});
  list = r.list();
  CHECK(list[0].who->id == "a");
  CHECK(list[0].to == 1499);
  CHECK(list[1].who->id == "f");
  CHECK(list[1].to == 3000);
  check_cover(r, {"a", "c", "e", "f"});
}
