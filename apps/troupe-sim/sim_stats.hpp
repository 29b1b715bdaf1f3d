#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace troupe::sim {

class prefix_cache;
class kv_store;

/// Counters of the PD rendezvous (decode side, and rejections on both sides).
struct rendezvous_counters {
  std::uint64_t met = 0;      ///< Rooms whose prefill was confirmed by its bootstrap server.
  std::uint64_t timeouts = 0; ///< Rooms not confirmed within `bootstrap_timeout_ms`.
  std::uint64_t rejected = 0; ///< Requests refused for lack of a `bootstrap_room`.
  std::uint64_t skipped = 0;  ///< Rooms without a bootstrap server (null port): not checked.
  std::uint64_t rooms = 0;    ///< Rooms recorded by this worker as a prefill.
};

/// Counters of vLLM's KV handoff, decode side.
struct kv_counters {
  std::uint64_t fetches = 0;        ///< Requests whose KV blocks were read from a prefill.
  std::uint64_t fetched_blocks = 0; ///< Blocks read.
  std::uint64_t fetch_failures = 0; ///< Requests refused because their blocks could not be read.
  std::uint64_t recomputed = 0;     ///< Decode requests without params: the prompt computed here.
};

/// What `GET /sim/stats` reports (request counts exclude `/sim/*` and `/health`).
struct sim_stats {
  std::size_t active = 0;  ///< Data-plane requests in flight.
  std::uint64_t total = 0; ///< Requests received.
  std::uint64_t active_tokens =
      0; ///< Prompt and planned output tokens of the generations in flight.
  std::map<std::string, std::uint64_t, std::less<>> by_path; ///< Requests per path (bounded).
  rendezvous_counters rendezvous;
  kv_counters kv;

  /// Counts a request for `path`.
  void count(std::string_view path);

  /// `{"active","total","by_path","cache":{"blocks","hits","misses"},"rendezvous":{...},
  /// "kv":{...}}`.
  nlohmann::json to_json(const prefix_cache& cache, const kv_store& store) const;
};

/// Holds one unit of `sim_stats::active` while alive, and keeps the stats alive: a request
/// dropped by the io_context after the simulator is gone (at shutdown) still finds them.
class inflight {
public:
  /// Counts one more request in flight.
  explicit inflight(std::shared_ptr<sim_stats> s) noexcept : stats_(std::move(s)) {
    ++stats_->active;
  }
  inflight(inflight&& other) noexcept : stats_(std::exchange(other.stats_, nullptr)) {}
  inflight& operator=(inflight&& other) noexcept {
    if (this != &other) {
      release();
      stats_ = std::exchange(other.stats_, nullptr);
    }
    return *this;
  }
  inflight(const inflight&) = delete;
  inflight& operator=(const inflight&) = delete;
  ~inflight() { release(); }

  /// Gives the unit back now (idempotent).
  void release() noexcept {
    if (stats_ != nullptr) {
      --stats_->active;
      stats_ = nullptr;
    }
  }

private:
  std::shared_ptr<sim_stats> stats_;
};

} // namespace troupe::sim
