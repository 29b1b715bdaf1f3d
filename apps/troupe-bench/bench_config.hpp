#pragma once

#include "apps/troupe-bench/api.hpp"
#include "apps/troupe-bench/shared_prefix_workload.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace troupe::bench {

/// How requests are released.
enum class arrival_kind {
  poisson, ///< Exponential gaps at the rate (open loop, as independent clients).
  uniform, ///< Equal gaps at the rate (open loop).
};

/// Every setting of troupe-bench, declared once as a flag in `add_flags`.
struct bench_config {
  // -- targets --
  std::vector<std::string> urls; ///< Gateway (or worker) base URLs, used round robin.
  api_kind api = api_kind::chat;
  std::string model;                ///< Empty: the first model of the first URL's /v1/models.
  std::string api_key;              ///< Sent as `Authorization: Bearer` (and `x-api-key`).
  std::vector<std::string> headers; ///< Extra `Name: value` headers on every request.
  std::string routing_key_header;   ///< Header carrying the prompt's user id; empty: none.

  // -- requests --
  bool stream = true;
  long max_tokens = 128;
  bool ignore_eos = false;
  std::optional<double> temperature;

  // -- load --
  std::vector<double> rates;              ///< Requests/s, one stage each (open loop).
  std::vector<std::size_t> concurrencies; ///< Requests in flight, one stage each (closed loop).
  arrival_kind arrival = arrival_kind::poisson;
  double duration_s = 10;              ///< Length of a stage's arrivals; 0: unbounded.
  std::size_t requests = 0;            ///< Requests per stage; 0: unbounded.
  double warmup_s = 0;                 ///< Leading part of each stage left out of the stats.
  double timeout_s = 600;              ///< Whole-request deadline.
  std::size_t max_connections = 16384; ///< Connections per URL; beyond, requests queue.
  std::size_t threads = 1;             ///< Event loops; each drives a share of the load.

  // -- workload --
  std::string prompts_file; ///< JSONL prompts; empty: the shared-prefix generator.
  shared_prefix_shape shape;

  // -- output --
  std::string json_path;         ///< Write the JSON report here; `-` for stdout.
  std::string png_path;          ///< Draw latency against load here (gnuplot).
  std::string progress = "auto"; ///< `auto` (when stderr is a terminal), `on`, `off`.
};

/// Declares every setting as a flag of `app`, bound to `cfg`.
void add_flags(CLI::App& app, bench_config& cfg);

/// Checks the settings together; the reason of the first problem, if any.
std::optional<std::string> validate(const bench_config& cfg);

/// The stages of a run: one per rate or per concurrency (concurrency 1 when neither is set).
struct stage_spec {
  bool open_loop = false; ///< Rate stage (true) or concurrency stage.
  double rate = 0;
  std::size_t concurrency = 0;

  /// `rate 20/s` or `concurrency 8`.
  std::string label() const;
};

/// The stages `cfg` asks for, in order.
std::vector<stage_spec> stages_of(const bench_config& cfg);

} // namespace troupe::bench
