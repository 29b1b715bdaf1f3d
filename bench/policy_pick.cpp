// Cost of one worker selection, for bench/policy_cost.sh: picks a worker for a stream of
// chat-like prompts with one strategy. Under callgrind, only `measured_picks` is counted
// (`--toggle-collect`), so instructions / picks is the cost of a pick, tree upkeep included.
//
//   troupe-policy-pick POLICY [PROMPT_BYTES] [PICKS] [WORKERS] [MAX_TREE_SIZE]

#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"
#include "bench/bench_fleet.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::actors;

namespace {

/// Prompts as a chat client sends them: one of 16 long system prompts (conversations of a few
/// applications), then a user turn of its own; `bytes` long in all.
std::vector<std::string> make_prompts(std::size_t n, std::size_t bytes) {
  std::mt19937_64 rng{42};
  std::vector<std::string> systems;
  for (int s = 0; s < 16; ++s) {
    std::string text = "[{\"role\":\"system\",\"content\":\"Application " + std::to_string(s) + ":";
    while (text.size() < bytes * 3 / 4) {
      text += " rule-" + std::to_string(rng() % 100000);
    }
    systems.push_back(text + "\"},{\"role\":\"user\",\"content\":\"");
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    auto text = systems[rng() % systems.size()];
    while (text.size() < bytes - 3) {
      text.push_back(static_cast<char>('a' + rng() % 26));
    }
    out.push_back(text + "\"}]");
  }
  return out;
}

/// The measured region: `picks` selections over `prompts`, round and round.
__attribute__((noinline)) std::size_t measured_picks(strategy& s,
                                                     const std::vector<const worker_entry*>& cands,
                                                     const std::vector<std::string>& prompts,
                                                     std::size_t picks) {
  std::size_t sum = 0;
  selection sel;
  for (std::size_t i = 0; i < picks; ++i) {
    auto& p = prompts[i % prompts.size()];
    sel.prompt.parts = {p, {}};
    sel.routing_key.assign(p, p.size() - 12, 12);
    sum += s.pick(cands, sel);
  }
  return sum;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s POLICY [PROMPT_BYTES] [PICKS] [WORKERS] [MAX_TREE_SIZE]\n",
                 argv[0]);
    return 2;
  }
  std::string policy = argv[1];
  std::size_t bytes = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 4096;
  std::size_t picks = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 10000;
  std::size_t workers = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 8;
  policy_config cfg;
  if (argc > 5) {
    cfg.max_tree_size = std::strtoul(argv[5], nullptr, 10);
  }
  auto strat = make_strategy(policy, cfg);
  if (!strat) {
    std::fprintf(stderr, "unknown policy %s\n", policy.c_str());
    return 2;
  }
  bench::bench_fleet fleet{workers, *strat};
  auto& cands = fleet.cands;
  auto prompts = make_prompts(2000, bytes);
  // Warm-up: every prompt seen once, so the measured picks run on a populated tree.
  std::size_t sink = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    selection sel;
    sel.prompt.parts = {prompts[i], {}};
    sink += strat->pick(cands, sel);
  }
  auto t0 = std::chrono::steady_clock::now();
  sink += measured_picks(*strat, cands, prompts, picks);
  auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0);
  std::printf("%s: %zu picks of %zu-byte prompts over %zu workers: %.0f ns/pick (wall)%s\n",
              policy.c_str(), picks, bytes, workers, ns.count() / static_cast<double>(picks),
              sink == 0xdeadbeef ? " " : "");
  std::printf("state: %s\n", strat->describe().dump().c_str());
  return 0;
}
