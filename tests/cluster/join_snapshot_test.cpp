// What a member that links late is told (cluster/join_snapshot.cpp) on the deterministic
// scheduler: node "a" with a cache_aware policy (16-byte blocks) and a Responses affinity over
// workers w0..w2, fake peers recording what they receive.

#include "tests/cluster/cache_aware_fixture.hpp"

#include <algorithm>

using namespace troupe::test::cluster_node;

namespace {

using id_pairs = std::vector<std::pair<std::string, std::string>>;

const std::string prompt =
    "[{\"role\":\"system\",\"content\":\"" + std::string(100, 'S') + " shared system prompt\"}]";

struct snapshot_fixture : cache_aware_fixture {
  std::shared_ptr<services::response_affinity> affinity =
      std::make_shared<services::response_affinity>(1000);

  snapshot_fixture() { affinity->share_with_peers(1000); }

  node_config snapshot_settings() {
    auto c = settings();
    c.prefix_block_bytes = 16;
    c.snapshot_wait = 2s;
    return c;
  }

  void start_node(node_config c) {
    node_deps deps{registry, view, nullptr, dialer, refusals, {}, {}, {}};
    deps.prefix_policies = {{"regular", policy}};
    deps.responses = affinity;
    start(std::move(c), std::move(deps));
    caf::anon_send(node.node, publish_atom_v, actors::fleet_ptr{snap});
    run();
  }

  void start_node() { start_node(snapshot_settings()); }

  /// A peer that says hello as `name`: it reads response updates (`reads`) and keeps a view of
  /// `block_bytes` (0: none).
  fake_peer joiner(const std::string& name, bool reads = true, std::uint32_t block_bytes = 16,
                   std::uint64_t inc = 42) {
    return greeted_peer(
        name,
        [&](auto& h) {
          h.responses = reads;
          h.prefix_block_bytes = block_bytes;
        },
        inc);
  }

  /// `p`'s load report saying its registry digest is `d` (ours: in sync).
  void report(const fake_peer& p, const std::string& name, std::uint64_t d = digest,
              std::uint64_t inc = 42) {
    cluster_message m;
    m.body = protocol::load_report{++seq, {}, d, 0, 0, 0, true, {}};
    say(p, name, std::move(m), inc);
  }

  /// The (response id, worker) pairs of the snapshots `p` received, in order.
  id_pairs snapshot_ids(const fake_peer& p) {
    id_pairs out;
    for (auto& u : received<protocol::response_update>(p)) {
      if (u.snapshot) {
        out.insert(out.end(), u.responses.begin(), u.responses.end());
      }
    }
    return out;
  }

  /// The prefix updates of the snapshots `p` received.
  std::vector<protocol::prefix_update> snapshot_prefixes(const fake_peer& p) {
    auto all = received<protocol::prefix_update>(p);
    std::erase_if(all, [](auto& u) { return !u.snapshot; });
    return all;
  }

  json status() { return inspect()["join_snapshots"]; }

  json policy_view() { return inspect_policy()["shared_view"]; }

  std::uint64_t seq = 0;
};

} // namespace

TEST_CASE_METHOD(snapshot_fixture, "a member linked anew is told the ids and placements this "
                                   "node knows, once, when its registry holds our workers") {
  start_node();
  // Learned while alone: nobody to tell at the tick.
  affinity->remember("resp_own", "w0");
  affinity->remember_remote("resp_from_a_peer", "w1");
  affinity->remember("resp_elsewhere", "w-not-served");
  auto w = pick(prompt);
  tick();
  auto b = joiner("b");
  // Its registry does not hold our workers yet: nothing told.
  report(b, "b", 1);
  CHECK(snapshot_ids(b).empty());
  CHECK(snapshot_prefixes(b).empty());
  CHECK(status()["due"] == json::array({"b"}));
  report(b, "b");
  CHECK(snapshot_ids(b) == id_pairs{{"resp_own", "w0"}, {"resp_from_a_peer", "w1"}});
  auto px = snapshot_prefixes(b);
  REQUIRE(px.size() == 1);
  CHECK(px[0].role == "regular");
  CHECK(px[0].block_bytes == 16);
  REQUIRE(px[0].workers.size() == 1);
  CHECK(px[0].workers[0].worker == w);
  auto c = chain_of(prompt);
  std::reverse(c.begin(), c.end()); // deepest first: the receiver ends with the first most recent
  CHECK(px[0].workers[0].hashes == c);
  auto st = status();
  CHECK(st["snapshots_sent"] == 1);
  CHECK(st["sent_unsynced"] == 0);
  CHECK(st["response_ids_sent"] == 2);
  CHECK(st["prefix_blocks_sent"] == c.size());
  CHECK(st["due"].empty());
  // Once per link: later reports, ticks and a hello asking again tell nothing more.
  auto messages = b.got->messages.size();
  report(b, "b");
  tick();
  cluster_message again;
  protocol::cluster_hello h{"api:b", "10.0.0.9:7001", {}};
  h.responses = true;
  h.prefix_block_bytes = 16;
  h.again = true;
  again.body = h;
  say(b, "b", std::move(again));
  CHECK(snapshot_ids(b).size() == 2);
  CHECK(snapshot_prefixes(b).size() == 1);
  CHECK(b.got->messages.size() > messages); // it was greeted again, without a snapshot
}

TEST_CASE_METHOD(snapshot_fixture, "a member whose registry never matches is told at the "
                                   "deadline") {
  start_node();
  affinity->remember("resp_1", "w2");
  auto b = joiner("b");
  for (int i = 0; i < 19; ++i) {
    tick();
  }
  CHECK(snapshot_ids(b).empty());
  tick();
  tick();
  CHECK(snapshot_ids(b) == id_pairs{{"resp_1", "w2"}});
  CHECK(status()["sent_unsynced"] == 1);
}

TEST_CASE_METHOD(snapshot_fixture, "older members, other block sizes and strangers are told "
                                   "nothing") {
  start_node();
  affinity->remember("resp_1", "w0");
  pick(prompt);
  tick();
  auto old = joiner("old", false, 0);
  auto other = joiner("other", true, 32);
  report(old, "old");
  report(other, "other");
  CHECK(received<protocol::response_update>(old).empty());
  CHECK(received<protocol::prefix_update>(old).empty());
  CHECK(snapshot_ids(other) == id_pairs{{"resp_1", "w0"}}); // it reads ids, not our blocks
  CHECK(snapshot_prefixes(other).empty());
  // A stranger (no hello on its link) reporting a matching registry: refused, told nothing.
  auto stranger = peer();
  report(stranger, "mallory");
  report(stranger, "b");
  CHECK(stranger.got->messages.empty());
  CHECK(refused(refusal::not_member) == 2);
}

TEST_CASE_METHOD(snapshot_fixture, "a snapshot is split to fit the message cap and bounded to "
                                   "the newest") {
  auto c = snapshot_settings();
  c.max_message_bytes = 1024;
  c.response_snapshot_ids = 150;
  c.prefix_snapshot_blocks = 4;
  start_node(c);
  id_pairs all;
  for (int i = 0; i < 200; ++i) {
    auto id = "resp_" + std::string(24, '0') + std::to_string(1000 + i);
    affinity->remember(id, "w1");
    all.emplace_back(id, "w1");
  }
  auto w = pick(prompt);
  tick();
  auto b = joiner("b");
  report(b, "b");
  auto got = snapshot_ids(b);
  CHECK(got == id_pairs(all.end() - 150, all.end())); // the newest 150, oldest first
  std::size_t updates = 0;
  for (auto& u : received<protocol::response_update>(b)) {
    updates += u.snapshot;
  }
  CHECK(updates > 5);
  for (auto& bytes : b.got->raw) {
    CHECK(bytes.size() <= 1024);
  }
  auto px = snapshot_prefixes(b);
  REQUIRE(px.size() == 1);
  REQUIRE(px[0].workers.size() == 1);
  CHECK(px[0].workers[0].worker == w);
  auto chain = chain_of(prompt);
  CHECK(px[0].workers[0].hashes ==
        std::vector<std::uint64_t>{chain[3], chain[2], chain[1], chain[0]}); // the newest 4
}

TEST_CASE_METHOD(snapshot_fixture, "a member that restarts is told again on its new link") {
  start_node();
  affinity->remember("resp_1", "w0");
  auto b = joiner("b");
  report(b, "b");
  CHECK(snapshot_ids(b).size() == 1);
  cluster_message bye;
  bye.body = protocol::cluster_bye{};
  say(b, "b", std::move(bye));
  auto b2 = joiner("b", true, 16, 43);
  report(b2, "b", digest, 43);
  CHECK(snapshot_ids(b2) == id_pairs{{"resp_1", "w0"}});
  CHECK(status()["snapshots_sent"] == 2);
}

TEST_CASE_METHOD(snapshot_fixture, "a snapshot received is taken by the policy of its role and "
                                   "the affinity, and counted apart") {
  start_node();
  auto b = joiner("b");
  cluster_message ids;
  ids.body = protocol::response_update{{{"resp_b", "w2"}, {"resp_x", "w-not-served"}}, true};
  say(b, "b", std::move(ids));
  CHECK(affinity->worker_of("resp_b") == "w2");
  CHECK_FALSE(affinity->worker_of("resp_x"));
  auto c = chain_of(prompt);
  std::reverse(c.begin(), c.end());
  cluster_message blocks;
  blocks.body = protocol::prefix_update{16, {{"w2", c}}, "regular", true};
  say(b, "b", std::move(blocks));
  CHECK(policy_view()["merged"] == c.size());
  CHECK(pick(prompt) == "w2"); // b's pick, never seen here, is followed
  auto st = status();
  CHECK(st["messages_received"] == 2);
  CHECK(st["response_ids_received"] == 1);
  CHECK(st["prefix_blocks_received"] == c.size());
  auto rs = inspect()["response_affinity"];
  CHECK(rs["ids_received"] == 0); // tick gossip counts stay apart
  CHECK(rs["unknown_worker"] == 1);
}

TEST_CASE_METHOD(snapshot_fixture, "prefix updates go only to the policy of their role") {
  start_node();
  auto b = joiner("b");
  auto c = chain_of(prompt);
  cluster_message prefill;
  prefill.body = protocol::prefix_update{16, {{"w1", c}}, "prefill", false};
  say(b, "b", std::move(prefill));
  CHECK(policy_view()["merged"] == 0);
  CHECK(policy_view()["unknown_worker"] == 0); // not even looked at
  CHECK(inspect()["prefix_view"]["other_role"] == 1);
  // An older sender names no role: every policy takes it, as before.
  cluster_message older;
  older.body = protocol::prefix_update{16, {{"w1", c}}, {}, false};
  say(b, "b", std::move(older));
  CHECK(policy_view()["merged"] == c.size());
  // What this node sends names its policy's role.
  pick(prompt);
  tick();
  auto sent = received<protocol::prefix_update>(b);
  REQUIRE_FALSE(sent.empty());
  CHECK(sent.back().role == "regular");
  CHECK_FALSE(sent.back().snapshot);
}
