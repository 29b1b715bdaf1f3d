// The shared prefix view between cluster nodes (cluster/prefix_gossip.cpp) on the deterministic
// scheduler: one node with a real cache_aware policy, fake peers recording the raw bytes they
// receive.

#include "tests/cluster/cache_aware_fixture.hpp"

#include <algorithm>

using namespace troupe::test::cluster_node;

namespace {

/// The prefix updates `p` received, in order.
std::vector<protocol::prefix_update> prefixes(const fake_peer& p) {
  return p.got->of<protocol::prefix_update>();
}

const std::string secret_prompt =
    "[{\"role\":\"system\",\"content\":\"" + std::string(200, 'S') + " top-secret-words\"}]";

/// Node "a" with a cache_aware policy keeping a shared view of 16-byte blocks over workers
/// w0..w2, and peers that dial nothing (they say hello to the node's endpoint).
struct prefix_fixture : cache_aware_fixture {

  void start(std::size_t budget = 256 * 1024) {
    auto c = settings();
    c.max_message_bytes = 8u * 1024 * 1024;
    c.prefix_block_bytes = 16;
    c.prefix_max_bytes_per_tick = budget;
    node_deps deps{registry, view, nullptr, dialer, refusals, {}, {}, {}};
    deps.prefix_policies = {{"regular", policy}};
    fixture::start(std::move(c), std::move(deps));
  }

  /// A member that keeps a view of `block_bytes` (0: none, as an older node).
  fake_peer member(const std::string& name, std::uint32_t block_bytes) {
    return greeted_peer(name, [block_bytes](auto& h) { h.prefix_block_bytes = block_bytes; });
  }

  json prefix_status() {
    auto s = ask<std::string>(node.node, inspect_atom_v);
    return s ? json::parse(*s)["prefix_view"] : json{};
  }
};

} // namespace

TEST_CASE_METHOD(prefix_fixture, "a pick's prefix blocks reach the members keeping a view: hashes, "
                                 "never the prompt") {
  start();
  auto b = member("b", 16);
  auto old = member("old", 0);
  auto other = member("other", 32);
  auto w = pick(secret_prompt);
  tick();
  auto got = prefixes(b);
  REQUIRE(got.size() == 1);
  CHECK(got[0].block_bytes == 16);
  REQUIRE(got[0].workers.size() == 1);
  CHECK(got[0].workers[0].worker == w);
  auto c = chain_of(secret_prompt);
  std::reverse(c.begin(), c.end());
  CHECK(got[0].workers[0].hashes == c);
  // What the peer read off the wire holds nothing of the prompt.
  for (auto& bytes : b.got->raw) {
    CHECK(bytes.find("top-secret") == std::string::npos);
    CHECK(bytes.find(std::string(16, 'S')) == std::string::npos);
  }
  // Nodes without a view (older ones) and of another block size are sent none.
  CHECK(prefixes(old).empty());
  CHECK(prefixes(other).empty());
  // Nothing new, nothing sent.
  tick();
  CHECK(prefixes(b).size() == 1);
  auto st = prefix_status();
  CHECK(st["updates_sent"] == 1);
  CHECK(st["hashes_sent"] == c.size());
  CHECK(st["members"]["b"] == 16);
  CHECK(st["views"]["regular"]["blocks"] == c.size());
}

TEST_CASE_METHOD(prefix_fixture, "a pick placing a new prefix reaches the members at once; its "
                                 "refreshes wait for the tick") {
  start();
  tick(); // the node's first tick is behind it
  auto b = member("b", 16);
  auto blocks = chain_of(secret_prompt).size();
  auto w = pick(secret_prompt); // no tick: only what the pick set off runs
  auto got = prefixes(b);
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].workers.size() == 1);
  CHECK(got[0].workers[0].worker == w);
  CHECK(got[0].workers[0].hashes.size() == blocks);
  CHECK(prefix_status()["fresh_drains"] == 1);
  // The same prompt again: nothing new for that worker, nothing sent at once.
  CHECK(pick(secret_prompt) == w);
  CHECK(prefixes(b).size() == 1);
  tick(); // its blocks went out this tick already
  CHECK(prefixes(b).size() == 1);
  CHECK(pick(secret_prompt) == w);
  CHECK(prefixes(b).size() == 1);
  tick(); // the refresh, with the tick
  got = prefixes(b);
  REQUIRE(got.size() == 2);
  CHECK(got[1].workers[0].hashes.size() == blocks);
  CHECK(prefix_status()["fresh_drains"] == 1);
}

TEST_CASE_METHOD(prefix_fixture, "with no member keeping a view, a new prefix waits for the tick") {
  start();
  auto old = member("old", 0);
  pick(secret_prompt);
  auto st = prefix_status();
  CHECK(st["fresh_drains"] == 0);
  CHECK(st["fresh_deferred"] == 1);
  CHECK(prefixes(old).empty());
}

TEST_CASE_METHOD(prefix_fixture,
                 "a member's update steers this node's picks to the worker it named") {
  start();
  auto b = member("b", 16);
  // Without the update this node would pick by its own "most room" rank; name a worker that
  // rank does not put first.
  auto local_choice = [&] {
    prefix_fixture other;
    return other.pick(secret_prompt);
  }();
  auto target = local_choice == "w2" ? std::string{"w1"} : std::string{"w2"};
  cluster_message m;
  protocol::prefix_update u;
  u.block_bytes = 16;
  auto c = chain_of(secret_prompt);
  std::reverse(c.begin(), c.end());
  u.workers.push_back({target, c});
  u.workers.push_back({"w-unknown", {1, 2, 3}});
  m.body = u;
  say(b, "b", m);
  CHECK(pick(secret_prompt + " a follow-up") == target);
  auto state = inspect_policy();
  CHECK(state["picks"]["cache_hit"] == 1);
  CHECK(state["shared_view"]["merged"] == c.size());
  CHECK(state["shared_view"]["unknown_worker"] == 3);
  CHECK(prefix_status()["hashes_received"] == c.size() + 3);

  SECTION("an update of another block size is ignored and counted") {
    protocol::prefix_update wrong;
    wrong.block_bytes = 32;
    wrong.workers.push_back({"w0", {9, 9}});
    cluster_message m2;
    m2.body = wrong;
    say(b, "b", m2);
    CHECK(prefix_status()["refused_block_size"] == 1);
    CHECK(inspect_policy()["shared_view"]["merged"] == c.size());
  }
}

TEST_CASE_METHOD(prefix_fixture,
                 "a tick sends at most its byte budget; what does not fit is counted") {
  start(1024);
  auto b = member("b", 16);
  // Each a new prefix: the first few go out at once, until the budget left is below a
  // quarter; the others wait for the tick, which sends what fits of them.
  for (char x = 'a'; x < 'a' + 10; ++x) {
    pick(std::string(600, x)); // 37 blocks, no block shared with another prompt
  }
  tick();
  REQUIRE(b.got->raw.size() >= 2);
  auto& last = b.got->raw.back();
  CHECK(last.size() <= 1024 + 128); // the budget counts the body; the envelope is small
  auto st = prefix_status();
  CHECK(st["hashes_dropped"].get<std::uint64_t>() > 0);
  CHECK(st["hashes_sent"].get<std::uint64_t>() + st["hashes_dropped"].get<std::uint64_t>() ==
        10 * chain_of(std::string(600, 'a')).size());
  CHECK(st["fresh_drains"].get<std::uint64_t>() >= 1);
  CHECK(st["fresh_deferred"].get<std::uint64_t>() >= 1);
}
