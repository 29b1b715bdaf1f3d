#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"
#include "tests/fakes/fake_fleet.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace troupe;
using namespace troupe::actors;
using troupe::test::fake_fleet;

namespace {

/// smg's mode: the tests below pin its thresholds (score mode: cache_score_test.cpp).
policy_config smg() {
  policy_config cfg;
  cfg.cache_aware_mode = "smg";
  return cfg;
}

selection prompt(std::string_view text, std::string_view second = {}) {
  selection sel;
  sel.prompt.parts = {text, second};
  return sel;
}

/// Picks for `text` among `cands`, returning the chosen worker's id.
std::string pick(strategy& s, const std::vector<const worker_entry*>& cands, std::string_view text,
                 std::string_view second = {}) {
  return cands[s.pick(cands, prompt(text, second))]->id;
}

std::size_t tree_bytes(const strategy& s, const std::string& id) {
  auto trees = s.describe()["tree_bytes"];
  return trees.contains(id) ? trees[id].get<std::size_t>() : 0;
}

const std::string system_a = "[{\"role\":\"system\",\"content\":\"" + std::string(400, 'A');
const std::string system_b = "[{\"role\":\"system\",\"content\":\"" + std::string(400, 'B');

} // namespace

TEST_CASE("cache aware (smg mode): requests sharing a long prefix follow the worker that saw it") {
  fake_fleet f{3};
  auto s = make_strategy("cache_aware", smg());
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  auto cands = f.all();
  // Empty trees: the first conversation goes to the worker with the most room (all tie: the
  // first), the second to one that holds nothing yet.
  CHECK(pick(*s, cands, system_a + "question 1") == "w0");
  CHECK(pick(*s, cands, system_b + "question 1") == "w1");
  for (int i = 2; i < 10; ++i) {
    CHECK(pick(*s, cands, system_a + "question " + std::to_string(i)) == "w0");
    CHECK(pick(*s, cands, system_b + "question " + std::to_string(i)) == "w1");
  }
  auto d = s->describe();
  CHECK(d["picks"]["cache_hit"] == 16);
  CHECK(d["picks"]["most_room"] == 2);
  CHECK(tree_bytes(*s, "w2") == 0);
  CHECK(tree_bytes(*s, "w0") > 400);
}

TEST_CASE("cache aware (smg mode): below the cache threshold, the worker with the most room wins") {
  fake_fleet f{2};
  auto cfg = smg();
  cfg.cache_threshold = 0.3;
  auto s = make_strategy("cache_aware", cfg);
  auto cands = f.all();
  CHECK(pick(*s, cands, std::string(100, 'x')) == "w0");
  CHECK(pick(*s, cands, std::string(50, 'y')) == "w1");
  // 20 of 100 bytes match w0's text: 0.2 < 0.3, so w1 (50 bytes held, less than 100).
  CHECK(pick(*s, cands, std::string(20, 'x') + std::string(80, 'z')) == "w1");
  // 30 of 100: at the threshold, the match counts.
  CHECK(pick(*s, cands, std::string(30, 'x') + std::string(70, 'q')) == "w0");

  cfg.cache_threshold = 0.1;
  auto low = make_strategy("cache_aware", cfg);
  CHECK(pick(*low, cands, std::string(100, 'x')) == "w0");
  CHECK(pick(*low, cands, std::string(50, 'y')) == "w1");
  CHECK(pick(*low, cands, std::string(20, 'x') + std::string(80, 'z')) == "w0");
}

TEST_CASE(
    "cache aware (smg mode): an imbalanced load overrides affinity; a balanced one does not") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware", smg()); // abs 64, rel 1.5
  auto cands = f.all();
  CHECK(pick(*s, cands, system_a + "1") == "w0");
  // 60 more in flight: within the absolute threshold, affinity holds.
  f.at("w0").live->in_flight = 60;
  CHECK(pick(*s, cands, system_a + "2") == "w0");
  // 300 vs 230: 70 apart but not 1.5 times: still balanced.
  f.at("w0").live->in_flight = 300;
  f.at("w1").live->in_flight = 230;
  CHECK(pick(*s, cands, system_a + "3") == "w0");
  // 100 vs 0: imbalanced on both counts, the least loaded takes it, cached prefix or not...
  f.at("w0").live->in_flight = 100;
  f.at("w1").live->in_flight = 0;
  auto before = tree_bytes(*s, "w1");
  CHECK(pick(*s, cands, system_a + "4") == "w1");
  CHECK(s->describe()["picks"]["imbalanced"] == 1);
  // ...and that worker now holds the prompt too.
  CHECK(tree_bytes(*s, "w1") > before + 400);
  // The load of other cluster members counts.
  f.at("w0").live->in_flight = 0;
  f.at("w1").live->in_flight = 0;
  f.at("w1").live->remote_in_flight = 100;
  CHECK(pick(*s, cands, system_b + "x") == "w0");
}

TEST_CASE("cache aware (smg mode): of several workers holding the match, the least loaded") {
  fake_fleet f{3};
  auto s = make_strategy("cache_aware", smg());
  auto cands = f.all();
  CHECK(pick(*s, cands, system_a + "1") == "w0");
  f.at("w0").live->in_flight = 70; // imbalanced: w1 takes the same prompt
  CHECK(pick(*s, cands, system_a + "1") == "w1");
  f.at("w0").live->in_flight = 5;
  f.at("w1").live->in_flight = 2;
  CHECK(pick(*s, cands, system_a + "2") == "w1");
  f.at("w1").live->in_flight = 9;
  CHECK(pick(*s, cands, system_a + "3") == "w0");
}

TEST_CASE("cache aware (smg mode): only candidates count as holders") {
  fake_fleet f{3};
  auto s = make_strategy("cache_aware", smg());
  CHECK(pick(*s, f.all(), system_a + "1") == "w0");
  CHECK(pick(*s, f.all(), system_b + "1") == "w1");
  // w0 failed this request already (or is down): among w1 and w2, w2 has the most room.
  CHECK(pick(*s, f.only({"w1", "w2"}), system_a + "2") == "w2");
  CHECK(pick(*s, f.all(), system_a + "3") == "w0");
}

TEST_CASE("cache aware (smg mode): system text and conversation match as one prompt") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware", smg());
  auto cands = f.all();
  CHECK(pick(*s, cands, "\"" + std::string(300, 's') + "\"", "[{\"q\":1}]") == "w0");
  CHECK(pick(*s, cands, "\"other\"", "[{\"q\":1}]") == "w1");
  CHECK(pick(*s, cands, "\"" + std::string(300, 's') + "\"", "[{\"q\":2}]") == "w0");
  CHECK(tree_bytes(*s, "w0") == 302 + 9 + 3); // the first prompt whole, then the new "2}]"
}

TEST_CASE(
    "cache aware (smg mode): without a prompt, the least loaded worker; nothing is remembered") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware", smg());
  f.at("w0").live->in_flight = 3;
  auto cands = f.all();
  for (int i = 0; i < 5; ++i) {
    CHECK(cands[s->pick(cands, selection{})]->id == "w1");
  }
  CHECK(s->describe()["picks"]["no_prompt"] == 5);
  CHECK(s->describe()["tree_nodes"] == 0);
}

TEST_CASE("cache aware (smg mode): each worker's tree stays within --max-tree-size") {
  fake_fleet f{2};
  auto cfg = smg();
  cfg.max_tree_size = 1000;
  auto s = make_strategy("cache_aware", cfg);
  auto cands = f.all();
  for (int i = 0; i < 200; ++i) {
    pick(*s, cands, std::to_string(i) + std::string(300, static_cast<char>('a' + i % 26)));
    REQUIRE(tree_bytes(*s, "w0") <= 1000);
    REQUIRE(tree_bytes(*s, "w1") <= 1000);
  }
  CHECK(tree_bytes(*s, "w0") > 0);
}

TEST_CASE("cache aware (smg mode): a worker that leaves the fleet loses its tree") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware", smg());
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  CHECK(pick(*s, f.all(), system_a + "1") == "w0");
  CHECK(pick(*s, f.all(), system_b + "1") == "w1");
  auto nodes = s->describe()["tree_nodes"].get<std::size_t>();
  f.remove("w0");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  CHECK_FALSE(s->describe()["tree_bytes"].contains("w0"));
  CHECK(s->describe()["tree_nodes"].get<std::size_t>() < nodes);
  // Back under the same id, it starts cold: w1 still holds B, w0 gets A as the emptier one.
  f.add("w0");
  s->on_fleet(f.snapshot(), protocol::worker_type::regular);
  CHECK(tree_bytes(*s, "w0") == 0);
  CHECK(pick(*s, f.all(), system_b + "2") == "w1");
  CHECK(pick(*s, f.all(), system_a + "2") == "w0");
}

TEST_CASE("cache aware (smg mode): workers of another role are not this policy's") {
  fake_fleet f{2};
  auto s = make_strategy("cache_aware", smg());
  CHECK(pick(*s, f.all(), system_a + "1") == "w0");
  // The prefill policy is told about a fleet where w0 and w1 are regular: not its workers.
  s->on_fleet(f.snapshot(), protocol::worker_type::prefill);
  CHECK(s->describe()["tree_bytes"].empty());
}
