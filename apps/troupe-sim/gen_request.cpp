#include "apps/troupe-sim/gen_request.hpp"

namespace troupe::sim {

std::size_t gen_state::prompt_tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& p : prompts) {
    n += p.tokens;
  }
  return n;
}

std::size_t gen_state::cached_tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& p : prompts) {
    n += p.cached;
  }
  return n;
}

std::size_t gen_state::completion_tokens() const noexcept {
  std::size_t n = 0;
  for (const auto& s : seqs) {
    n += s.ids.size();
  }
  return n;
}

double gen_state::elapsed_seconds() const noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

} // namespace troupe::sim
