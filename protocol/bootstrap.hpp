#pragma once

#include "protocol/routes.hpp"

#include <atomic>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace troupe::protocol {

/// Where a decode worker fetches a request's KV cache: its prefill worker's bootstrap server.
struct bootstrap_target {
  std::string host;                  ///< The prefill worker's host, from its URL.
  std::optional<std::uint16_t> port; ///< Its bootstrap port; sent as JSON `null` when unset.
};

/// Hands out bootstrap rooms: pseudo-random integers in [0, 2^63), distinct in practice.
/// Thread-safe and lock-free (SplitMix64 over an atomic counter).
class room_source {
public:
  /// A source seeded from `std::random_device`.
  room_source();

  /// A source with a fixed seed (tests).
  explicit room_source(std::uint64_t seed) noexcept : state_(seed) {}

  /// The next room.
  std::uint64_t next() noexcept;

private:
  std::atomic<std::uint64_t> state_;
};

/// The largest batch the gateway injects bootstrap fields for; a larger one (`n` is not bounded
/// by the body size) is refused rather than expanded.
inline constexpr std::size_t max_bootstrap_batch = 4096;

/// Sequences of a PD request that each need their own bootstrap room, as its operation's
/// `batch_rule` counts them: `/generate` with a `text` list or an `input_ids` batch (list of
/// lists), chat completions with `n > 1`, completions with a list `prompt` (of strings or of
/// token lists; a flat token list is one prompt). Nothing for a single request, whose bootstrap
/// fields are scalars.
std::optional<std::size_t> bootstrap_batch_size(operation op, const nlohmann::ordered_json& body);

/// Sets `bootstrap_host`, `bootstrap_port` and `bootstrap_room` on `body` (a JSON object): as
/// scalars, or, for a batch, as arrays of `*batch` entries with one fresh room each. Replaces
/// values the client sent for these three fields; touches nothing else. Returns the rooms.
std::vector<std::uint64_t> inject_bootstrap(nlohmann::ordered_json& body,
                                            std::optional<std::size_t> batch,
                                            const bootstrap_target& target, room_source& rooms);

/// `body` serialized once for the wire: compact, key order kept, invalid UTF-8 replaced.
std::string dump_body(const nlohmann::ordered_json& body);

} // namespace troupe::protocol
