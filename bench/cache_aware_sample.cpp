// What cache_aware's sample size (`--cache-aware-sample`) costs in routing quality: the real
// strategy drives a simulated fleet, in simulated time, with no sockets and no clock. Run by
// bench/cache_aware_sample.sh; results in docs/performance.md.
//
//   troupe-cache-aware-sample WORKERS SAMPLE [CLIENTS] [REQUESTS] [SEED]
//
// The fleet: WORKERS simulated engines, each with an unbounded prefix cache (the prompt blocks
// it was sent, as SGLang's radix cache holds them until memory runs out) and a latency that
// grows with its queue: (2 ms + 20 µs per uncached 4-byte token) x (1 + 0.15 x requests it
// already has), the shape of troupe-sim's `--load-slowdown`. CLIENTS closed-loop users, each a
// conversation of three turns (turn n+1 repeats turns 1..n and the answers, as chat clients
// send them) under one of 16 shared ~6 KB system prompts, then a new user: the workload of
// bench/cache_aware_bench.py's `convo` and `popular` together. Prints, for REQUESTS requests:
// the share of prompt bytes the chosen worker already held (hit), the mean and p99 latency,
// and the busiest worker's peak queue.

#include "actors/policies/strategy.hpp"
#include "actors/policy.hpp"
#include "bench/bench_fleet.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

using namespace troupe;
using namespace troupe::actors;

namespace {

constexpr std::size_t block = 64; ///< Cache granularity of a simulated engine, in bytes.

/// The chained hashes of `text`'s whole blocks: the i-th names the text's first i + 1 blocks.
std::vector<std::size_t> block_chain(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t h = 0;
  for (std::size_t at = 0; at + block <= text.size(); at += block) {
    h = h * 1099511628211ULL ^
        std::hash<std::string_view>{}(std::string_view(text).substr(at, block));
    out.push_back(h);
  }
  return out;
}

/// The bytes of the prompt of `chain` a worker holds from its start.
std::size_t cached_bytes(const std::unordered_set<std::size_t>& cache,
                         const std::vector<std::size_t>& chain) {
  std::size_t n = 0;
  while (n < chain.size() && cache.contains(chain[n])) {
    ++n;
  }
  return n * block;
}

struct client {
  std::string prompt; ///< The conversation so far.
  int turn = 0;
};

struct done_event {
  double at;
  std::size_t client;
  std::size_t worker;
  bool operator>(const done_event& o) const { return at > o.at; }
};

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s WORKERS SAMPLE [CLIENTS] [REQUESTS] [SEED]\n", argv[0]);
    return 2;
  }
  const std::size_t workers = std::strtoul(argv[1], nullptr, 10);
  policy_config cfg;
  cfg.cache_aware_sample = std::strtoul(argv[2], nullptr, 10);
  if (workers == 0 || cfg.cache_aware_sample == 0) {
    std::fprintf(stderr, "WORKERS and SAMPLE must be at least 1\n");
    return 2;
  }
  const std::size_t clients = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 2 * workers;
  const std::size_t requests = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 100000;
  std::mt19937_64 rng{argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 7};

  auto strat = make_strategy("cache_aware", cfg);
  bench::bench_fleet fleet{workers, *strat};
  auto& entries = fleet.entries;
  auto& cands = fleet.cands;

  std::vector<std::string> systems;
  for (int s = 0; s < 16; ++s) {
    std::string text = "[{\"role\":\"system\",\"content\":\"App " + std::to_string(s) + ":";
    while (text.size() < 6000) {
      text += " rule-" + std::to_string(rng() % 100000);
    }
    systems.push_back(text + "\"}");
  }
  auto words = [&](std::size_t n) {
    std::string out;
    while (out.size() < n) {
      out += " w" + std::to_string(rng() % 50000);
    }
    return out;
  };
  auto next_turn = [&](client& c) {
    if (c.turn == 0 || c.turn == 3) {
      c.turn = 0;
      c.prompt = systems[rng() % systems.size()];
    }
    ++c.turn;
    c.prompt += ",{\"role\":\"user\",\"content\":\"" + words(400) + "\"}";
  };

  std::vector<std::unordered_set<std::size_t>> caches(workers);
  std::vector<client> users(clients);
  std::vector<int> peak(workers, 0);
  std::priority_queue<done_event, std::vector<done_event>, std::greater<>> events;
  std::vector<double> latencies;
  latencies.reserve(requests);
  double prompt_bytes = 0;
  double hit_bytes = 0;
  double now = 0;
  std::size_t sent = 0;

  auto send = [&](std::size_t u) {
    auto& c = users[u];
    next_turn(c);
    selection sel;
    sel.prompt.parts = {c.prompt, {}};
    auto k = strat->pick(cands, sel);
    auto& live = *entries[k]->live;
    auto chain = block_chain(c.prompt);
    auto hit = cached_bytes(caches[k], chain);
    caches[k].insert(chain.begin(), chain.end());
    prompt_bytes += static_cast<double>(c.prompt.size());
    hit_bytes += static_cast<double>(hit);
    const double queue = live.in_flight.load();
    const double ms =
        (2.0 + 0.02 * static_cast<double>(c.prompt.size() - hit) / 4.0) * (1.0 + 0.15 * queue);
    live.in_flight.fetch_add(1);
    peak[k] = std::max(peak[k], live.in_flight.load());
    latencies.push_back(ms);
    events.push({now + ms, u, k});
    ++sent;
  };

  for (std::size_t u = 0; u < clients; ++u) {
    send(u);
  }
  while (sent < requests) {
    auto e = events.top();
    events.pop();
    now = e.at;
    entries[e.worker]->live->in_flight.fetch_sub(1);
    // The answer joins the conversation; the next turn follows at once.
    users[e.client].prompt += ",{\"role\":\"assistant\",\"content\":\"" + words(200) + "\"}";
    send(e.client);
  }
  std::sort(latencies.begin(), latencies.end());
  double mean = 0;
  for (auto l : latencies) {
    mean += l;
  }
  mean /= static_cast<double>(latencies.size());
  std::printf("workers %zu sample %zu clients %zu requests %zu: hit %.3f mean %.2f ms p99 %.2f ms "
              "peak queue %d\n",
              workers, cfg.cache_aware_sample, clients, requests, hit_bytes / prompt_bytes, mean,
              latencies[latencies.size() * 99 / 100], *std::max_element(peak.begin(), peak.end()));
  return 0;
}
