#pragma once

#include "apps/troupe-bench/workload.hpp"

#include <cstdint>
#include <vector>

namespace troupe::bench {

/// The shape of the generated workload: a few shared system prompts, many users each assigned
/// one of them, each user holding a multi-turn conversation. Lengths are in words; one word
/// is one token for the simulator's tokenizer (docs/simulator.md) and about one for real ones.
struct shared_prefix_shape {
  std::size_t system_prompts = 4;          ///< Distinct system prompts (applications).
  std::size_t system_prompt_tokens = 1000; ///< Words in each system prompt.
  std::size_t users = 32;                  ///< Conversations per round.
  std::size_t turns = 3;                   ///< User turns per conversation.
  std::size_t user_tokens = 50;            ///< Words in each user turn.
  std::size_t assistant_tokens = 50;       ///< Words of each earlier assistant turn in the history.
  double skew = 0;        ///< Zipf exponent of system prompt popularity; 0: uniform.
  std::uint64_t seed = 1; ///< Same seed, same prompts.
};

/// Picks 0..n−1 with probability proportional to 1 / (i + 1)^s.
class zipf_sampler {
public:
  zipf_sampler(std::size_t n, double s);

  /// The index for a uniform draw `u` in [0, 1).
  std::size_t operator()(double u) const;

  /// The probability of index `i`.
  double probability(std::size_t i) const;

private:
  std::vector<double> cdf_;
};

/// Generates conversations of the given shape. Turn t of a user's conversation sends the
/// user's system prompt, turns 0..t−1 with synthetic assistant answers, and user turn t: so
/// each request's prompt extends the user's previous one (a prefix cache can serve it), and
/// every user of one system prompt shares that prefix. Requests come turn by turn: every
/// user's turn 0 (in a shuffled order), then every user's turn 1, ...; after the last turn a
/// new round starts with new users (the system prompts stay). Deterministic for a seed.
class shared_prefix_workload final : public workload {
public:
  explicit shared_prefix_workload(shared_prefix_shape shape);

  prompt next() override;
  std::string describe() const override;
  /// No slots: every prompt is new.
  const prompt& at(std::size_t) const override { return none_; }

  /// The prompt of `user`'s turn `turn` (0-based).
  prompt make(std::uint64_t user, std::size_t turn) const;

  /// Which system prompt `user` has.
  std::size_t system_of(std::uint64_t user) const;

  /// System prompt `i`.
  const std::string& system_prompt(std::size_t i) const { return systems_[i]; }

  const shared_prefix_shape& shape() const noexcept { return shape_; }

private:
  void start_round();

  shared_prefix_shape shape_;
  zipf_sampler popularity_;
  std::vector<std::string> systems_;
  std::uint64_t round_ = 0;
  std::size_t turn_ = 0;
  std::size_t pos_ = 0;
  std::vector<std::uint64_t> order_;
  prompt none_;
};

} // namespace troupe::bench
