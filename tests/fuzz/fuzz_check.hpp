#pragma once

// What every harness shares: a check that fails the run the way a crash does, so libFuzzer
// saves the input, and small helpers over the raw bytes.

#include <cstdio>
#include <cstdlib>
#include <string_view>

/// Aborts (libFuzzer keeps the input as a crash) when `cond` is false, naming the broken
/// property and where it is.
#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond);             \
      std::abort();                                                                                \
    }                                                                                              \
  } while (false)

namespace troupe::fuzz {

/// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (s.size() - i < len) {
      return false;
    }
    for (std::size_t k = 1; k < len; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
        return false;
      }
    }
    i += len;
  }
  return true;
}

} // namespace troupe::fuzz
