#include "apps/troupe-bench/shared_prefix_workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string_view>

namespace troupe::bench {

namespace {

// Short words (at most 8 bytes: one token each for the simulator's tokenizer).
constexpr std::array<std::string_view, 64> vocabulary{
    "the",    "model",  "answer", "system", "user",   "token",   "cache",  "prefix",
    "worker", "route",  "fleet",  "query",  "reply",  "stream",  "policy", "load",
    "node",   "batch",  "prompt", "length", "turn",   "context", "value",  "shared",
    "rapid",  "simple", "clear",  "exact",  "useful", "other",   "every",  "small",
    "large",  "first",  "last",   "next",   "often",  "never",   "always", "quick",
    "data",   "text",   "word",   "line",   "page",   "block",   "tree",   "ring",
    "key",    "hash",   "list",   "map",    "set",    "queue",   "stack",  "graph",
    "alpha",  "beta",   "gamma",  "delta",  "omega",  "sigma",   "kappa",  "theta",
};

// splitmix64: seeds for independent deterministic streams from (seed, a, b).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  return mix(mix(mix(seed) ^ a) ^ b);
}

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// `first` then `n − 1` words drawn from the vocabulary.
std::string words(std::uint64_t seed, std::string_view first, std::size_t n) {
  std::string out;
  if (n == 0) {
    return out;
  }
  std::mt19937_64 rng{seed};
  out.reserve(n * 7);
  out.append(first);
  for (std::size_t i = 1; i < n; ++i) {
    out.push_back(' ');
    out.append(vocabulary[rng() % vocabulary.size()]);
  }
  return out;
}

enum stream : std::uint64_t {
  system_text = 1,
  user_text = 2,
  assistant_text = 3,
  assignment = 4,
  shuffle = 5
};

} // namespace

zipf_sampler::zipf_sampler(std::size_t n, double s) : cdf_(std::max<std::size_t>(n, 1)) {
  double total = 0;
  for (std::size_t i = 0; i < cdf_.size(); ++i) {
    total += 1.0 / std::pow(static_cast<double>(i + 1), s);
    cdf_[i] = total;
  }
  for (auto& c : cdf_) {
    c /= total;
  }
  cdf_.back() = 1.0;
}

std::size_t zipf_sampler::operator()(double u) const {
  auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<std::size_t>(static_cast<std::size_t>(it - cdf_.begin()), cdf_.size() - 1);
}

double zipf_sampler::probability(std::size_t i) const {
  return i == 0 ? cdf_[0] : cdf_[i] - cdf_[i - 1];
}

shared_prefix_workload::shared_prefix_workload(shared_prefix_shape shape)
    : shape_(shape), popularity_(shape.system_prompts, shape.skew) {
  systems_.reserve(shape_.system_prompts);
  for (std::size_t i = 0; i < shape_.system_prompts; ++i) {
    // A distinct first word: two system prompts share no prefix at all.
    systems_.push_back(words(stream_seed(shape_.seed, system_text, i), "s" + std::to_string(i),
                             shape_.system_prompt_tokens));
  }
  start_round();
}

void shared_prefix_workload::start_round() {
  order_.resize(shape_.users);
  for (std::size_t u = 0; u < shape_.users; ++u) {
    order_[u] = round_ * shape_.users + u;
  }
  std::mt19937_64 rng{stream_seed(shape_.seed, shuffle, round_)};
  std::shuffle(order_.begin(), order_.end(), rng);
  turn_ = 0;
  pos_ = 0;
}

std::size_t shared_prefix_workload::system_of(std::uint64_t user) const {
  std::mt19937_64 rng{stream_seed(shape_.seed, assignment, user)};
  return popularity_(uniform01(rng));
}

prompt shared_prefix_workload::make(std::uint64_t user, std::size_t turn) const {
  prompt p;
  if (!systems_.empty()) {
    p.system = systems_[system_of(user)];
  }
  p.key = "user-" + std::to_string(user);
  const auto tag = "u" + std::to_string(user);
  for (std::size_t t = 0; t <= turn; ++t) {
    // A user's turns start with the user's id: conversations share only the system prompt.
    p.messages.push_back({"user", words(stream_seed(shape_.seed, user_text + (t << 8), user), tag,
                                        std::max<std::size_t>(shape_.user_tokens, 1))});
    if (t < turn) {
      p.messages.push_back(
          {"assistant", words(stream_seed(shape_.seed, assistant_text + (t << 8), user), "a",
                              std::max<std::size_t>(shape_.assistant_tokens, 1))});
    }
  }
  return p;
}

prompt shared_prefix_workload::next() {
  auto p = make(order_[pos_], turn_);
  if (++pos_ == order_.size()) {
    pos_ = 0;
    if (++turn_ == shape_.turns) {
      ++round_;
      start_round();
    }
  }
  return p;
}

std::string shared_prefix_workload::describe() const {
  return "shared-prefix: " + std::to_string(shape_.system_prompts) + " system prompts x " +
         std::to_string(shape_.system_prompt_tokens) + " words (zipf " +
         std::to_string(shape_.skew).substr(0, 4) + "), " + std::to_string(shape_.users) +
         " users x " + std::to_string(shape_.turns) + " turns of " +
         std::to_string(shape_.user_tokens) + " words (answers " +
         std::to_string(shape_.assistant_tokens) + "), seed " + std::to_string(shape_.seed);
}

} // namespace troupe::bench
