#pragma once

#include "apps/troupe-sim/kv_fetch.hpp"
#include "apps/troupe-sim/kv_store.hpp"
#include "apps/troupe-sim/pd_rendezvous.hpp"
#include "apps/troupe-sim/prefix_cache.hpp"
#include "apps/troupe-sim/request_log.hpp"
#include "apps/troupe-sim/room_board.hpp"
#include "apps/troupe-sim/sim_config.hpp"
#include "apps/troupe-sim/sim_stats.hpp"

#include <cstdio>
#include <memory>
#include <random>
#include <spdlog/logger.h>

namespace troupe::sim {

/// The seed of a worker's random draws: `--seed`, or a fresh one when it is 0, so that two
/// workers never hand out the same ids (as real engines do not).
inline std::uint64_t seed_of(const sim_config& cfg) {
  return cfg.seed != 0 ? cfg.seed
                       : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

/// The vLLM engine id of a worker: `--kv-engine-id`, or a fresh one (vLLM draws a uuid).
inline std::string engine_id_of(const sim_config& cfg, std::mt19937_64& rng) {
  if (!cfg.kv_engine_id.empty()) {
    return cfg.kv_engine_id;
  }
  char id[32];
  std::snprintf(id, sizeof id, "sim-engine-%016llx", static_cast<unsigned long long>(rng()));
  return id;
}

/// The state of one simulated worker, shared by its handlers. One io_context thread touches it.
struct sim_context {
  /// A worker configured by `cfg`, running on `ioc`, logging to `log`.
  sim_context(net::io_context& ioc, sim_config cfg, std::shared_ptr<spdlog::logger> log)
      : ioc(ioc), config(std::move(cfg)),
        cache(config.cache_block_tokens, config.cache_capacity_blocks),
        requests(config.request_log_size), rng(seed_of(config)), rooms(ioc), rendezvous(ioc),
        kv(ioc, engine_id_of(config, rng)), kv_reader(ioc), logger(std::move(log)) {
    config.kv_engine_id = kv.engine_id();
  }

  net::io_context& ioc;
  sim_config config;            ///< Current settings (`POST /sim/config` changes knobs).
  prefix_cache cache;           ///< The KV prefix cache.
  request_log requests;         ///< `GET /sim/requests`.
  sim_stats stats;              ///< `GET /sim/stats`.
  std::mt19937_64 rng;          ///< Error-rate draws and ids.
  room_board rooms;             ///< Rooms seen as a prefill worker.
  rendezvous_client rendezvous; ///< Asks prefill workers about rooms, as a decode worker.
  kv_store kv;                  ///< vLLM prefill: KV blocks pinned for decode workers.
  kv_fetch_client kv_reader;    ///< vLLM decode: reads KV blocks from prefill workers.
  std::uint16_t kv_port = 0;    ///< vLLM prefill: the bound KV side-channel port.
  std::shared_ptr<spdlog::logger> logger;
};

} // namespace troupe::sim
