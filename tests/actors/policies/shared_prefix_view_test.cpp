#include "actors/policies/prefix_blocks.hpp"
#include "actors/policies/shared_prefix_view.hpp"
#include "actors/policies/strategy.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

namespace {

policy_config shared(std::size_t block = 16, std::size_t pending = 32768,
                     std::string mode = "score") {
  policy_config cfg;
  cfg.prefix_block_bytes = block;
  cfg.prefix_max_pending = pending;
  cfg.cache_aware_mode = std::move(mode);
  return cfg;
}

/// cache_aware's two modes: the view feeds both.
std::string any_mode() {
  return GENERATE(as<std::string>{}, "score", "smg");
}

/// One gateway node's cache_aware strategy over `fleet`.
std::unique_ptr<strategy> node(const fake_fleet& fleet, policy_config cfg = shared()) {
  auto s = make_strategy("cache_aware", cfg);
  s->on_fleet(fleet.snapshot(), protocol::worker_type::regular);
  return s;
}

std::string pick(strategy& s, const fake_fleet& f, std::string_view text) {
  selection sel;
  sel.prompt.parts = {text, {}};
  auto cands = f.all();
  return cands[s.pick(cands, sel)]->id;
}

/// What a gossip tick takes (everything), or with `fresh_only` what a placement sends at once.
prefix_drain drain(strategy& s, bool fresh_only = false) {
  prefix_drain d;
  REQUIRE(s.take_prefixes(d, fresh_only));
  return d;
}

std::string system_prompt(char c) {
  return "[{\"role\":\"system\",\"content\":\"" + std::string(400, c) + "\"}";
}

std::uint64_t hashes(const prefix_drain& d) {
  std::uint64_t n = 0;
  for (auto& w : d.update.workers) {
    n += w.hashes.size();
  }
  return n;
}

} // namespace

TEST_CASE("shared view: a node follows the worker another node sent the prefix to") {
  auto mode = any_mode();
  INFO("mode " << mode);
  fake_fleet f{3};
  auto a = node(f, shared(16, 32768, mode));
  auto b = node(f, shared(16, 32768, mode));
  auto chosen = pick(*a, f, system_prompt('A') + ",user one]");
  auto d = drain(*a);
  REQUIRE(d.update.workers.size() == 1);
  CHECK(d.update.workers[0].worker == chosen);
  CHECK(d.update.block_bytes == 16);
  // What travels is the prompt's block chain, deepest block first: hashes, no text.
  std::vector<std::uint64_t> expected;
  prefix_block_hashes(system_prompt('A') + ",user one]", 16, expected);
  std::reverse(expected.begin(), expected.end());
  CHECK(d.update.workers[0].hashes == expected);

  SECTION("merged: b's first request with that prefix is a cache hit on the same worker") {
    b->merge_prefixes(d.update);
    // b's own tree is empty; another prompt first, so that "most room" would not pick it anyway
    pick(*b, f, system_prompt('Z') + ",other]");
    CHECK(pick(*b, f, system_prompt('A') + ",user two]") == chosen);
    CHECK(b->describe()["picks"]["cache_hit"] == 1);
    CHECK(b->describe()["shared_view"]["merged"] == expected.size());
  }
  SECTION("not merged: b knows nothing of it") {
    pick(*b, f, system_prompt('A') + ",user two]");
    CHECK(b->describe()["picks"]["cache_hit"] == 0);
    CHECK(b->describe()["picks"]["most_room"] == 1);
  }
  SECTION("another block size never matches") {
    auto c = node(f, shared(32, 32768, mode));
    c->merge_prefixes(d.update); // the cluster node refuses these; the chain would not match
    pick(*c, f, system_prompt('A') + ",user two]");
    CHECK(c->describe()["picks"]["cache_hit"] == 0);
  }
}

TEST_CASE("shared view: each worker's block goes out once per tick, within the pending limit") {
  fake_fleet f{2};
  auto a = node(f);
  auto text = system_prompt('A') + "]"; // 432 bytes: 27 blocks
  auto w = pick(*a, f, text);
  for (int i = 0; i < 4; ++i) {
    CHECK(pick(*a, f, text) == w);
  }
  auto d = drain(*a);
  CHECK(hashes(d) == 27);
  CHECK(hashes(drain(*a)) == 0); // taken
  pick(*a, f, text);
  CHECK(hashes(drain(*a)) == 27); // the next tick refreshes it (the worker's LRU order)

  auto small = node(f, shared(16, 10));
  pick(*small, f, text);
  auto cut = drain(*small);
  CHECK(hashes(cut) == 10);
  CHECK(cut.stats.dropped == 17);
  CHECK(cut.stats.recorded == 10);
  // Dropped from the update only: the node's own view holds the whole chain.
  CHECK(cut.stats.blocks == 27);
}

TEST_CASE("shared view: a worker that leaves takes its blocks; updates for unknown workers are "
          "counted, not kept") {
  fake_fleet f{2};
  auto a = node(f);
  auto b = node(f);
  pick(*a, f, system_prompt('A') + "]");
  auto d = drain(*a);
  auto gone = d.update.workers[0].worker;
  b->merge_prefixes(d.update);
  CHECK(b->describe()["shared_view"]["blocks"] == 27);
  f.remove(gone);
  b->on_fleet(f.snapshot(), protocol::worker_type::regular);
  CHECK(b->describe()["shared_view"]["blocks"] == 0);
  b->merge_prefixes(d.update);
  CHECK(b->describe()["shared_view"]["blocks"] == 0);
  CHECK(b->describe()["shared_view"]["unknown_worker"] == 27);
}

TEST_CASE("shared view: with the limits, a worker's blocks stay bounded") {
  fake_fleet f{1};
  auto cfg = shared();
  cfg.prefix_max_blocks_per_worker = 30;
  auto a = node(f, cfg);
  pick(*a, f, system_prompt('A') + "]");
  pick(*a, f, system_prompt('B') + "]");
  auto v = a->describe()["shared_view"];
  CHECK(v["blocks"] == 30);
  // 27 blocks each, the first (the system message's opening bytes) shared: 53 > 30.
  CHECK(v["evicted"] == 23);
}

TEST_CASE("shared view: three nodes taking turns place each system prompt as one node would") {
  // 8 system prompts, 4 workers, requests spread round robin over 3 nodes; the nodes exchange
  // what they recorded every 4 requests (a gossip tick), so each often meets a prefix it has
  // only heard of, and sometimes one nobody told it of yet.
  auto mode = any_mode();
  INFO("mode " << mode);
  fake_fleet f{4};
  std::vector<std::unique_ptr<strategy>> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(node(f, shared(16, 32768, mode)));
  }
  policy_config alone; // a single node, no view
  alone.cache_aware_mode = mode;
  auto one = node(f, alone);
  std::map<char, std::set<std::string>> cluster_placed, single_placed;
  int n = 0;
  for (int round = 0; round < 6; ++round) {
    for (char p = 'A'; p < 'A' + 8; ++p) {
      auto text = system_prompt(p) + ",{\"user\":\"u" + std::to_string(round) + "\"}]";
      cluster_placed[p].insert(pick(*nodes[n % 3], f, text));
      single_placed[p].insert(pick(*one, f, text));
      if (++n % 4 == 0) {
        for (auto& from : nodes) {
          auto d = drain(*from);
          for (auto& to : nodes) {
            if (to != from) {
              to->merge_prefixes(d.update);
            }
          }
        }
      }
    }
  }
  for (auto& [p, workers] : cluster_placed) {
    INFO("system prompt " << p);
    CHECK(workers.size() == 1); // every node sent it to one worker
    CHECK(single_placed[p].size() == 1);
  }
  // And spread as one node spreads them: two prompts per worker.
  std::map<std::string, int> per_worker;
  for (auto& [p, workers] : cluster_placed) {
    ++per_worker[*workers.begin()];
  }
  CHECK(per_worker.size() == 4);
}

TEST_CASE("shared view: nodes meeting a new prefix at once, before any update, agree on it") {
  auto mode = any_mode();
  INFO("mode " << mode);
  fake_fleet f{4};
  std::set<std::string> chosen;
  for (char p = 'A'; p < 'A' + 8; ++p) {
    auto a = node(f, shared(16, 32768, mode));
    auto b = node(f, shared(16, 32768, mode));
    INFO("system prompt " << p);
    auto at_a = pick(*a, f, system_prompt(p) + ",u1]");
    // b counts a request more at w1 than a did (nodes see each other's loads a tick late).
    f.at("w1").live->in_flight = 1;
    auto at_b = pick(*b, f, system_prompt(p) + ",u2]");
    f.at("w1").live->in_flight = 0;
    CHECK(at_a == at_b);
    chosen.insert(at_a);
  }
  // By the prompt's rank, not by the candidates' order: new prefixes spread over the workers.
  CHECK(chosen.size() >= 3);
}

TEST_CASE("shared view: blocks new to their worker are fresh, to be sent before the tick") {
  fake_fleet f{2};
  auto a = node(f);
  auto text = system_prompt('A') + "]"; // 27 blocks
  CHECK_FALSE(a->prefixes_fresh());
  auto w = pick(*a, f, text);
  CHECK(a->prefixes_fresh());
  auto d = drain(*a, true);
  CHECK(hashes(d) == 27);
  CHECK_FALSE(a->prefixes_fresh());
  // The prompt grown by a turn: only its two new whole blocks are fresh.
  CHECK(pick(*a, f, text + std::string(32, 'x')) == w);
  CHECK(a->prefixes_fresh());
  CHECK(hashes(drain(*a, true)) == 2);
  CHECK(hashes(drain(*a)) == 0); // the rest went out this tick already
  // Next tick: the same prompt only refreshes what the members know; it waits for the tick.
  pick(*a, f, text);
  CHECK_FALSE(a->prefixes_fresh());
  CHECK(hashes(drain(*a, true)) == 0);
  CHECK(hashes(drain(*a)) == 27);
  // What a member told this node is not fresh either.
  auto b = node(f);
  b->merge_prefixes(d.update);
  CHECK(pick(*b, f, text) == w);
  CHECK_FALSE(b->prefixes_fresh());
}
