#include "apps/troupe-sim/tokenizer.hpp"

#include <array>

namespace troupe::sim {

namespace {

constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

constexpr std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Ids below this are "special" in real vocabularies; the pseudo-tokenizer never produces them.
constexpr token_id first_regular_id = 256;

// The words of generated text: plain, short, one token each.
constexpr std::array<std::string_view, 64> words{{
    "the",   "a",      "of",    "and",    "to",     "in",      "is",     "it",    "that",   "model",
    "token", "worker", "cache", "prefix", "decode", "prefill", "fast",   "slow",  "simple", "quiet",
    "blue",  "green",  "river", "stone",  "light",  "cloud",   "north",  "south", "early",  "late",
    "small", "large",  "time",  "space",  "answer", "signal",  "noise",  "order", "field",  "value",
    "route", "node",   "graph", "path",   "queue",  "batch",   "stream", "event", "clear",  "sharp",
    "warm",  "cold",   "young", "old",    "round",  "flat",    "open",   "close", "high",   "low",
    "first", "last",   "next",  "done",
}};

template <class F> void for_each_piece(std::string_view text, F&& f) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    while (i < n && is_space(text[i])) {
      ++i;
    }
    std::size_t start = i;
    while (i < n && !is_space(text[i])) {
      ++i;
    }
    for (std::size_t p = start; p < i; p += max_piece_bytes) {
      f(text.substr(p, std::min(max_piece_bytes, i - p)));
    }
  }
}

} // namespace

std::uint64_t mix64(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t z = a ^ (b * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

token_id piece_id(std::string_view piece) noexcept {
  return first_regular_id + static_cast<token_id>(fnv1a(piece) % (vocab_size - first_regular_id));
}

void tokenize_append(std::string_view text, std::vector<token_id>& out) {
  for_each_piece(text, [&](std::string_view piece) { out.push_back(piece_id(piece)); });
}

std::vector<token_id> tokenize(std::string_view text) {
  std::vector<token_id> out;
  out.reserve(text.size() / 5 + 1);
  tokenize_append(text, out);
  return out;
}

std::size_t count_tokens(std::string_view text) {
  std::size_t n = 0;
  for_each_piece(text, [&](std::string_view) { ++n; });
  return n;
}

std::uint64_t hash_tokens(std::span<const token_id> tokens) noexcept {
  std::uint64_t h = 0x51ed270b27a7a3e1ULL;
  for (auto t : tokens) {
    h = mix64(h, t);
  }
  return h;
}

std::string_view output_word(std::uint64_t seed, std::size_t i) noexcept {
  return words[mix64(seed, i) % words.size()];
}

double token_logprob(token_id id, std::size_t position) noexcept {
  // Spread over (-4, 0): deterministic, plausible, never 0 (a logprob of 0 looks like a bug).
  auto h = mix64(id, position);
  return -0.001 - static_cast<double>(h % 3999) / 1000.0;
}

} // namespace troupe::sim
