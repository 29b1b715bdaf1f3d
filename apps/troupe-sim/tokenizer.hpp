#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::sim {

/// A token of the simulator's pseudo-vocabulary.
using token_id = std::uint32_t;

/// Size of the pseudo-vocabulary (reported as the model's vocabulary size).
constexpr token_id vocab_size = 32000;

/// The longest piece of a word that makes one token; longer words make several.
constexpr std::size_t max_piece_bytes = 8;

/// Appends the tokens of `text` to `out`. A token is a whitespace-separated word, or a piece of
/// at most `max_piece_bytes` bytes of a longer word. Deterministic, so equal prefixes of text give
/// equal prefixes of tokens (what the prefix cache relies on).
void tokenize_append(std::string_view text, std::vector<token_id>& out);

/// The tokens of `text`.
std::vector<token_id> tokenize(std::string_view text);

/// How many tokens `text` has (as `tokenize(text).size()`, without allocating).
std::size_t count_tokens(std::string_view text);

/// The id of one piece of text (a word or a piece of a long word).
token_id piece_id(std::string_view piece) noexcept;

/// A 64-bit hash of a token sequence (seeds the output of a prompt).
std::uint64_t hash_tokens(std::span<const token_id> tokens) noexcept;

/// The `i`-th word the simulated model writes for a sequence seeded with `seed`. Every word is
/// one token of the pseudo-vocabulary.
std::string_view output_word(std::uint64_t seed, std::size_t i) noexcept;

/// A deterministic log-probability in (-4, 0) for `id` at `position`.
double token_logprob(token_id id, std::size_t position) noexcept;

/// Mixes two 64-bit values into one (splitmix64 finalizer of `a ^ b * k`).
std::uint64_t mix64(std::uint64_t a, std::uint64_t b) noexcept;

} // namespace troupe::sim
