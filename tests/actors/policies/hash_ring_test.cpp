#include "actors/policies/hash_ring.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

using troupe::actors::hash_ring;

namespace {

constexpr int keys = 20000;

std::string key(int i) {
  return "session-" + std::to_string(i);
}

/// The owner (a name) of every key, with all members eligible but `down`.
std::vector<std::string> owners(const std::vector<std::string>& names,
                                const std::string& down = {}) {
  hash_ring ring;
  ring.assign(names);
  std::vector<char> eligible;
  for (auto& n : names) {
    eligible.push_back(n != down);
  }
  std::vector<std::string> out;
  for (int i = 0; i < keys; ++i) {
    auto m = ring.find(key(i), eligible);
    REQUIRE(m != hash_ring::npos);
    out.push_back(names[m]);
  }
  return out;
}

const std::vector<std::string> four{"http://10.0.0.1:8000", "http://10.0.0.2:8000",
                                    "http://10.0.0.3:8000", "http://10.0.0.4:8000"};

} // namespace

TEST_CASE("hash ring: the owner of a key depends on the names only, not their order") {
  auto a = owners(four);
  auto b = owners({four[2], four[0], four[3], four[1]});
  CHECK(a == b);
  CHECK(hash_ring::hash("x") == hash_ring::hash("x"));
  // Pinned: the placement must not change between versions (every node of a cluster, old or
  // new, maps a key to the same worker).
  CHECK(hash_ring::hash("") == 0xf52a15e9a9b5e89bULL);
  CHECK(hash_ring::hash("session-1") == 0x8f9d4a83e2384785ULL);
}

TEST_CASE("hash ring: keys spread evenly over the members") {
  std::map<std::string, int> count;
  for (auto& o : owners(four)) {
    ++count[o];
  }
  REQUIRE(count.size() == 4);
  for (auto& [name, n] : count) {
    INFO(name << " owns " << n);
    CHECK(n > keys / 4 * 8 / 10);
    CHECK(n < keys / 4 * 12 / 10);
  }
}

TEST_CASE("hash ring: adding a fifth member moves ~1/5 of the keys, all to it") {
  auto before = owners(four);
  auto five = four;
  five.push_back("http://10.0.0.5:8000");
  auto after = owners(five);
  int moved = 0;
  for (int i = 0; i < keys; ++i) {
    if (before[i] != after[i]) {
      ++moved;
      REQUIRE(after[i] == five.back());
    }
  }
  INFO("moved " << moved << " of " << keys);
  CHECK(moved > keys / 5 * 7 / 10);
  CHECK(moved < keys / 5 * 13 / 10);
}

TEST_CASE("hash ring: a member down or removed moves only its own keys, the same way") {
  auto before = owners(four);
  auto down = owners(four, four[1]);
  auto removed = owners({four[0], four[2], four[3]});
  CHECK(down == removed); // walking past a member is removing it, and undone when it is back
  int moved = 0;
  for (int i = 0; i < keys; ++i) {
    if (before[i] != down[i]) {
      ++moved;
      REQUIRE(before[i] == four[1]);
    }
  }
  CHECK(moved > keys / 4 * 8 / 10);
  CHECK(moved < keys / 4 * 12 / 10);
}

TEST_CASE("hash ring: nobody eligible, or nobody at all") {
  hash_ring ring;
  CHECK(ring.find("k", {}) == hash_ring::npos);
  ring.assign(four);
  CHECK(ring.size() == 4 * 160);
  CHECK(ring.members() == 4);
  CHECK(ring.find("k", {0, 0, 0, 0}) == hash_ring::npos);
  CHECK(ring.find("k", {0, 0, 1, 0}) == 2);
}
