#include "actors/policies/cache_score.hpp"
#include "actors/policies/strategy.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

TEST_CASE("cache score: the prefill saved against the queue") {
  // Mean prompt 1000 bytes, weight 0.25: a request in flight costs 250 bytes of match.
  // 900 - 4 x 250 = -100 against 0 - 0: the idle worker.
  CHECK(best_by_score({{900, 4, 0}, {0, 0, 0}}, 1000, 0.25) == 1);
  // 900 - 3 x 250 = 150 against 0: the holder.
  CHECK(best_by_score({{900, 3, 0}, {0, 0, 0}}, 1000, 0.25) == 0);
}

TEST_CASE("cache score: a holder keeps the request until it is ~1/weight requests ahead") {
  for (int ahead = 0; ahead <= 6; ++ahead) {
    std::vector<cache_candidate> c{{1000, 2 + ahead, 5000}, {0, 2, 0}};
    // 1000 - 250 (2 + ahead) vs 0 - 500: the holder wins while 250 ahead < 1000.
    CHECK(best_by_score(c, 1000, 0.25) == (ahead < 4 ? 0u : 1u));
  }
}

TEST_CASE("cache score: ties go to the less loaded, then to the one holding less") {
  CHECK(best_by_score({{0, 3, 0}, {0, 1, 900}, {0, 1, 100}}, 1000, 0) == 2);
  CHECK(best_by_score({{500, 1, 10}, {500, 1, 10}}, 1000, 0.25) == 0);
  // Weight 0: pure affinity (the longest match), load only breaks ties.
  CHECK(best_by_score({{10, 0, 0}, {20, 50, 0}}, 1000, 0) == 1);
}

TEST_CASE("cache score: a holder's reported remote load counts up to the stale margin less") {
  // The holder's 2 + ahead requests are all other nodes' (load reports); the idle worker has
  // 2 too. Margin 0: the holder gives way once 4 ahead, as alone.
  for (int ahead = 0; ahead <= 10; ++ahead) {
    std::vector<cache_candidate> c{{1000, 2 + ahead, 5000, 2 + ahead}, {0, 2, 0, 2}};
    CHECK(best_by_score(c, 1000, 0.25, 0) == (ahead < 4 ? 0u : 1u));
    // Margin 4: 4 of the holder's are taken as ended (the other worker is no holder: its
    // count stands): it gives way once 8 ahead.
    CHECK(best_by_score(c, 1000, 0.25, 4) == (ahead < 8 ? 0u : 1u));
  }
  // Only reported load is doubted: this node's own requests count in full.
  CHECK(best_by_score({{1000, 7, 0, 0}, {0, 2, 0, 0}}, 1000, 0.25, 4) == 1);
  CHECK(best_by_score({{1000, 7, 0, 1}, {0, 2, 0, 0}}, 1000, 0.25, 4) == 1);
  CHECK(best_by_score({{1000, 7, 0, 5}, {0, 2, 0, 0}}, 1000, 0.25, 4) == 0);
  // Without a match nothing is doubted: the least loaded as counted.
  CHECK(best_by_score({{0, 5, 0, 5}, {0, 2, 0, 0}}, 1000, 0.25, 4) == 1);
}

namespace {

selection prompt(const std::string& text) {
  selection sel;
  sel.prompt.parts = {text, {}};
  return sel;
}

const std::string system_prompt = "[{\"role\":\"system\",\"content\":\"" + std::string(4000, 'S');

} // namespace

TEST_CASE("cache aware (score): a popular prefix spreads instead of making a hot spot") {
  fake_fleet f{4};
  auto s = make_strategy("cache_aware"); // score mode, weight 0.25
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  // 32 requests in flight at once, all sharing the system prompt, none finishing.
  std::map<std::string, int> placed;
  for (int i = 0; i < 32; ++i) {
    auto k = s->pick(cands, prompt(system_prompt + "user " + std::to_string(i) + "\"}]"));
    ++placed[cands[k]->id];
    ++cands[k]->live->in_flight;
  }
  REQUIRE(placed.size() == 4);
  for (auto& [id, n] : placed) {
    CHECK(n >= 5); // smg's thresholds put all 32 on one worker
    CHECK(n <= 11);
  }
  CHECK(s->describe()["picks"]["spilled"].get<int>() > 0);
}

TEST_CASE("cache aware (score): a conversation stays with its worker under a small imbalance") {
  fake_fleet f{4};
  auto s = make_strategy("cache_aware");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  std::map<int, std::string> home;
  for (int u = 0; u < 8; ++u) {
    auto turn1 =
        "[{\"role\":\"user\",\"content\":\"doc " + std::to_string(u) + std::string(3000, 'a' + u);
    home[u] = cands[s->pick(cands, prompt(turn1))]->id;
  }
  // Loads 2..5 in flight: at most 3 ahead of the idlest.
  for (int i = 0; i < 4; ++i) {
    cands[i]->live->in_flight = 2 + i;
  }
  for (int u = 0; u < 8; ++u) {
    auto turn2 = "[{\"role\":\"user\",\"content\":\"doc " + std::to_string(u) +
                 std::string(3000, 'a' + u) + "\"},{\"role\":\"assistant\",\"content\":\"ok";
    CHECK(cands[s->pick(cands, prompt(turn2))]->id == home[u]);
  }
}

TEST_CASE("cache aware: --cache-aware-mode smg keeps smg's hot spot, for comparison") {
  fake_fleet f{4};
  policy_config cfg;
  cfg.cache_aware_mode = "smg";
  auto s = make_strategy("cache_aware", cfg);
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  std::map<std::string, int> placed;
  for (int i = 0; i < 32; ++i) {
    auto k = s->pick(cands, prompt(system_prompt + "user " + std::to_string(i) + "\"}]"));
    ++placed[cands[k]->id];
    ++cands[k]->live->in_flight;
  }
  CHECK(placed.size() == 1);
  CHECK(s->describe()["mode"] == "smg");
}

TEST_CASE("cache aware (score): a match below the cache threshold counts as none") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  const std::string head = "[{\"role\":\"system\",\"content\":\"";
  // Both prompts share their JSON head only (< 30% of them): the second goes to the worker
  // holding less text, not to the holder of the head.
  CHECK(cands[s->pick(cands, prompt(head + std::string(200, 'a')))]->id == "w0");
  CHECK(cands[s->pick(cands, prompt(head + std::string(200, 'b')))]->id == "w1");
  CHECK(s->describe()["picks"]["most_room"] == 2);
  // A prompt mostly held by w0 follows it.
  CHECK(cands[s->pick(cands, prompt(head + std::string(200, 'a') + "more"))]->id == "w0");
  CHECK(s->describe()["picks"]["cache_hit"] == 1);
}

TEST_CASE("cache aware (score): in a cluster, a conversation stays on reports of ended turns") {
  // A conversation's next turn enters this node while the node that sent its last turn still
  // reports it in flight at the holder (and more there): up to --cache-aware-stale-margin of
  // those count as ended. The same load of this node's own moves the conversation, as alone.
  const std::string turn1 = system_prompt + "user 1\"}";
  const std::string turn2 = turn1 + ",{\"role\":\"assistant\",\"content\":\"ok\"}]";
  for (int margin : {0, 4}) {
    for (bool own : {false, true}) {
      fake_fleet f{4};
      policy_config cfg;
      cfg.cache_aware_stale_margin = margin;
      auto s = make_strategy("cache_aware", cfg);
      s->on_fleet(f.snapshot(), protocol::worker_type::regular);
      auto cands = f.all();
      auto home = cands[s->pick(cands, prompt(turn1))]->id;
      // Five ahead of every other worker: a score of 1 − 5 × 0.25 prompts, below an idle one.
      (own ? f.at(home).live->in_flight : f.at(home).live->remote_in_flight) = 5;
      auto next = cands[s->pick(cands, prompt(turn2))]->id;
      CAPTURE(margin, own);
      CHECK((next == home) == (margin == 4 && !own));
      CHECK(s->describe()["stale_margin"] == margin);
    }
  }
}

TEST_CASE("cache aware (score): a larger group than --cache-aware-sample is sampled; holders "
          "are always looked at") {
  fake_fleet f{40};
  auto cands = f.all();
  for (auto* w : cands) {
    w->live->in_flight = 3;
  }
  f.at("w17").live->in_flight = 0;
  // Prompts that share no byte with each other (each its own first byte), so that no worker
  // holds any of one: the pick takes the least loaded of what it looks at.
  auto idle_picks = [&](strategy& s, int n) {
    int idle = 0;
    for (int i = 0; i < n; ++i) {
      auto text = std::string(1, static_cast<char>(1 + i)) + std::string(300, 'q');
      idle += cands[s.pick(cands, prompt(text))]->id == "w17" ? 1 : 0;
    }
    return idle;
  };
  SECTION("a group no larger than the sample is looked at whole") {
    policy_config cfg;
    cfg.cache_aware_sample = 40;
    auto s = make_strategy("cache_aware", cfg);
    s->on_fleet(f.snapshot(), protocol::worker_type::regular);
    CHECK(idle_picks(*s, 50) == 50);
    CHECK(s->describe()["sample"] == 40);
  }
  SECTION("a larger one through random draws: the idle worker only when drawn") {
    policy_config cfg;
    cfg.cache_aware_sample = 4;
    auto s = make_strategy("cache_aware", cfg);
    s->on_fleet(f.snapshot(), protocol::worker_type::regular);
    // Drawn in ~9.6% of picks (four draws of 40): ~19 of 200; none at all about once in 5e8.
    auto idle = idle_picks(*s, 200);
    CHECK(idle > 0);
    CHECK(idle < 100);
    // A conversation's next turn goes back to the worker holding its first, which the four
    // draws rarely include: the holders of the longest match are scored whatever the sample.
    const auto turn1 = "[{\"role\":\"user\",\"content\":\"doc" + std::string(3000, 'd');
    auto home = cands[s->pick(cands, prompt(turn1))]->id;
    for (int i = 0; i < 50; ++i) {
      auto next = turn1 + "\"},{\"role\":\"assistant\",\"content\":\"" + std::to_string(i);
      CHECK(cands[s->pick(cands, prompt(next))]->id == home);
    }
  }
}
