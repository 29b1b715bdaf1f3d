#include "apps/troupe-sim/tokenizer.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace troupe::sim;

TEST_CASE("one token per word, long words cut in pieces", "[tokenizer]") {
  CHECK(count_tokens("") == 0);
  CHECK(count_tokens("   \n\t ") == 0);
  CHECK(count_tokens("hello world") == 2);
  CHECK(count_tokens("  hello \n world  ") == 2);
  CHECK(count_tokens("abcdefgh") == 1);
  CHECK(count_tokens("abcdefghi") == 2);
  CHECK(count_tokens(std::string(80, 'x')) == 10);
  CHECK(tokenize("hello world").size() == count_tokens("hello world"));
}

TEST_CASE("tokens are deterministic and depend on the text only", "[tokenizer]") {
  CHECK(tokenize("the quick brown fox") == tokenize("the quick brown fox"));
  CHECK(tokenize("a  b") == tokenize("a\nb"));
  CHECK(tokenize("cat")[0] != tokenize("dog")[0]);
  for (auto id : tokenize("some words of a prompt, with punctuation!")) {
    CHECK(id >= 256);
    CHECK(id < vocab_size);
  }
}

TEST_CASE("equal text prefixes give equal token prefixes", "[tokenizer]") {
  auto a = tokenize("system: be brief\nuser: what is a cache?\n");
  auto b = tokenize("system: be brief\nuser: what is a cache?\nassistant: a store\n");
  REQUIRE(b.size() > a.size());
  CHECK(std::equal(a.begin(), a.end(), b.begin()));
}

TEST_CASE("generated words are single tokens of the vocabulary", "[tokenizer]") {
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < 200; ++i) {
    auto w = output_word(42, i);
    CHECK(count_tokens(w) == 1);
    CHECK(tokenize(w)[0] == piece_id(w));
    seen.insert(w);
  }
  CHECK(seen.size() > 20); // varied text, not one word repeated
  CHECK(output_word(42, 7) == output_word(42, 7));
}

TEST_CASE("log-probabilities are negative and deterministic", "[tokenizer]") {
  for (token_id id : {256u, 1000u, 31999u}) {
    for (std::size_t pos : {0u, 1u, 100u}) {
      auto lp = token_logprob(id, pos);
      CHECK(lp < 0);
      CHECK(lp > -4.1);
      CHECK(lp == token_logprob(id, pos));
    }
  }
}
