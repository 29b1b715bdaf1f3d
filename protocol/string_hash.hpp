#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace troupe::protocol {

/// Hashes `std::string` keys and `std::string_view` probes alike, so that an unordered container
/// declared with it and `std::equal_to<>` is searched by a view without making a string.
///
/// The keys are short (paths, model names, label values, worker ids: 5-40 bytes) and hashed on
/// every request, several times: eight bytes at a time with a multiply per word (FxHash's step)
/// and a final mix, ~15 instructions for a 20-byte key where `std::hash` (`_Hash_bytes`, a byte
/// loop around murmur) takes ~70. Neither is seeded: these maps hold what the operator
/// configured or registered, and a client's text only probes them.
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    constexpr std::uint64_t k = 0x517cc1b727220a95ULL;
    std::uint64_t h = s.size();
    const char* p = s.data();
    std::size_t n = s.size();
    for (; n >= 8; n -= 8, p += 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = (((h << 5) | (h >> 59)) ^ w) * k;
    }
    if (n > 0) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, n);
      h = (((h << 5) | (h >> 59)) ^ w) * k;
    }
    // The product's high bits depend on every input bit, its low bits not: fold them down (the
    // containers take the hash modulo their bucket count).
    h ^= h >> 32;
    h *= k;
    h ^= h >> 29;
    return static_cast<std::size_t>(h);
  }
};

} // namespace troupe::protocol
