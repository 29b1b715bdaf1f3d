#pragma once

#include "protocol/worker.hpp"
#include "transport/connection_stats.hpp"
#include "transport/flow_control.hpp"
#include "transport/io_loop_stats.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Collectable;
} // namespace prometheus

namespace troupe::services {

class admission_control;

/// How one data-plane request ended, as the router metrics count it.
struct request_outcome {
  std::string_view endpoint;   ///< Operation name, e.g. `chat_completions`.
  std::string_view model;      ///< Model label: the model, `none` (not given) or `unknown`.
  bool streaming = false;      ///< The client asked for a stream.
  std::string_view error_type; ///< Why it failed (`bad_gateway`, ...); empty on success.
  std::optional<std::chrono::microseconds> ttft; ///< Time to the first byte of a stream.
};

/// One worker's gauges, as the fleet shows them when scraped.
struct worker_gauges {
  std::string url;         ///< The `worker` label.
  int requests_active = 0; ///< This node's requests in flight at the worker.
  bool healthy = false;    ///< Passing health checks.
  int breaker = 0;         ///< Circuit breaker: 0 closed, 1 open, 2 half-open.
};

/// Every Prometheus metric of a node, declared in one place (metrics.cpp), with one narrow
/// method per event. Safe from any thread. Counting costs an atomic add and a shared-lock
/// lookup of the cached label child: no allocation once a label set has been seen. Label sets
/// per family are capped (extra ones count under `other`), so client-chosen values such as
/// model names cannot grow the scrape without bound.
class metrics {
public:
  metrics();
  ~metrics();

  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  // -- HTTP (every response of the API port) --

  /// A response ended: `troupe_http_requests_total{method,path,status_code}` and
  /// `troupe_http_request_duration_seconds{method,path}`. `path` is the route pattern.
  void on_http_response(std::string_view method, std::string_view path, unsigned status,
                        std::chrono::steady_clock::duration elapsed);

  // -- router (data-plane requests) --

  /// A request actor finished: `troupe_router_requests_total{model,endpoint,streaming}`, and
  /// `troupe_router_request_errors_total{error_type}` / `troupe_router_ttft_seconds{model}`
  /// when they apply.
  void on_request_end(const request_outcome& r);

  /// A request goes to another worker after a failed attempt: `troupe_router_retries_total`
  /// with `reason` `status` (a retryable status) or `connect` (no response at all).
  void on_retry(bool after_status);

  // -- prefill/decode --

  /// A request is served by a prefill/decode pair: `troupe_pd_requests_total`.
  void on_pd_request();

  /// One leg of a pair failed: `troupe_pd_leg_failures_total{leg}` (`prefill` or `decode`).
  void on_pd_leg_failure(protocol::worker_type leg);

  /// A phase of a pair ended well: `troupe_pd_phase_duration_seconds{runtime,phase}`, phase
  /// `prefill` (the prefill leg, sent to answered), `decode_first_byte` (the decode leg, sent
  /// to its response head) or `decode` (sent to answered); runtime `sglang` or `vllm`.
  void on_pd_phase(std::string_view runtime, std::string_view phase,
                   std::chrono::steady_clock::duration took);

  /// How a vLLM pair handed the KV cache over: `troupe_pd_kv_transfer_total{connector,outcome}`,
  /// outcome `relayed` (the prefill's params), `minted` (Mooncake's, made by the gateway),
  /// `missing` (the prefill returned none: the decode computes the prompt) or `fanout` (n > 1:
  /// no prefill leg, the decode computes it).
  void on_pd_kv_transfer(std::string_view connector, std::string_view outcome);

  // -- cluster --

  /// The members this node knows, by state: `troupe_cluster_members{state}`.
  void set_cluster_members(std::size_t up, std::size_t suspect, std::size_t down);

  /// How long a registry change took to reach this node: `troupe_cluster_propagation_seconds`.
  void on_cluster_propagation(std::chrono::duration<double> delay);

  /// How old a peer's load report was when it took effect here:
  /// `troupe_cluster_load_age_seconds`.
  void on_cluster_load_age(std::chrono::duration<double> age);

  /// The cluster layer refused something (a message, a frame, a sync):
  /// `troupe_cluster_refused_total{reason}`; reasons are cluster/refusals.hpp's fixed set.
  void on_cluster_refused(std::string_view reason, std::uint64_t n = 1);

  /// Shared prefix view traffic: `troupe_cluster_prefix_bytes_total{direction}` (`sent`: one
  /// message's bytes times the members it went to; `received`).
  void on_cluster_prefix_bytes(std::string_view direction, std::uint64_t bytes);

  /// Shared prefix view hashes: `troupe_cluster_prefix_hashes_total{outcome}` (`sent`,
  /// `received`, `dropped`: over the budget of a tick, `unknown_worker`: for a worker this node
  /// does not serve).
  void on_cluster_prefix_hashes(std::string_view outcome, std::uint64_t n);

  /// Placement by owner (docs/cluster.md): `troupe_cluster_placement_total{outcome}`
  /// (`delegated`: asked a member, `answered`: answered a member's ask as owner, `unreachable`:
  /// the owner could not be asked, `expired`: no answer came, `late`: an answer came after its
  /// ask expired).
  void on_cluster_placement(std::string_view outcome);

  /// The time from a placement ask to its answer: `troupe_cluster_placement_seconds`.
  void on_cluster_placement_latency(std::chrono::duration<double> rtt);

  /// What policy `policy`'s shared prefix view holds: `troupe_cluster_prefix_blocks{policy}`,
  /// and `evicted` more blocks it evicted: `troupe_cluster_prefix_evicted_total{policy}`.
  void set_cluster_prefix_view(std::string_view policy, std::size_t blocks, std::uint64_t evicted);

  /// Response ids (and their workers) this node's Responses affinity holds:
  /// `troupe_response_affinity_ids`.
  void set_response_affinity_ids(std::size_t ids);

  /// Responses affinity shared between nodes: `troupe_cluster_response_ids_total{outcome}`
  /// (`sent`: ids sent to the members, once per id; `received`: ids taken from members;
  /// `unknown_worker`: received for a worker this node does not serve; `dropped`: left out, from
  /// a full outbox or too long for a message).
  void on_cluster_response_ids(std::string_view outcome, std::uint64_t n);

  // -- actors --

  /// The mailbox of a long-lived actor, as its last inspection saw it:
  /// `troupe_actor_mailbox_size{actor}`.
  void set_mailbox_size(const std::string& actor, std::size_t size);

  /// Drops the mailbox gauge of an actor that is gone.
  void forget_actor(const std::string& actor);

  /// Reads, at scrape time, every worker's gauges (`read` must be safe from any thread):
  /// `troupe_worker_requests_active`, `troupe_worker_health` and `troupe_worker_cb_state`, by
  /// `worker` url. The families are there, without series, until it is set.
  void watch_workers(std::function<std::vector<worker_gauges>()> read);

  /// Reads, at scrape time, how many actors run in the node's actor system (request actors and
  /// PD legs included): `troupe_actors_running`; and how many requests are in flight:
  /// `troupe_requests_in_flight`. Both functions must be safe from any thread.
  void watch_system(std::function<std::size_t()> running_actors,
                    std::function<std::size_t()> requests_in_flight);

  // -- admission control --

  /// Reads admission control's counts at scrape time: `troupe_admission_active`,
  /// `troupe_admission_queued`, `troupe_admission_limit{kind}`,
  /// `troupe_admission_admitted_total{path}`, `troupe_admission_rejected_total{reason}`,
  /// `troupe_admission_abandoned_total` (none of them while admission control is off).
  void watch_admission(std::shared_ptr<const admission_control> admission);

  /// A request waited `waited` in the queue for its slot:
  /// `troupe_admission_queue_wait_seconds`.
  void on_admission_wait(std::chrono::steady_clock::duration waited);

  // -- slow clients --

  /// Reads, at scrape time, what the API port's connections hold for slow clients:
  /// `troupe_client_queued_bytes`, `troupe_client_streams_paused` and
  /// `troupe_client_stream_pauses_total` (docs/operations.md).
  void watch_client_flow(std::shared_ptr<const transport::client_flow_stats> stats);

  /// Reads, at scrape time, the API port's connection counters: `troupe_http_connections`,
  /// `troupe_http_connections_refused_total`, `troupe_http_accept_errors_total`,
  /// `troupe_http_request_header_timeouts_total`, `troupe_http_header_refusals_total{reason}`,
  /// `troupe_tls_handshake_failures_total` (docs/operations.md).
  void watch_connections(std::shared_ptr<const transport::connection_stats> stats);

  /// Reads, at scrape time, what the io threads' loops count about busy polling:
  /// `troupe_io_busy_poll_spins_total`, `_hits_total`, `_vetoes_total` and `_seconds_total`,
  /// and of the deferred writes `troupe_io_sends_deferred_total` and
  /// `troupe_io_send_flushes_total` (docs/operations.md).
  void watch_io_loops(std::shared_ptr<const transport::io_loop_stats> stats);

  // -- exposition --

  /// What a Prometheus exposer serves: the registry of the families above, and the gauges
  /// read at scrape time.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables() const;

  /// The text exposition of every metric, as `GET /metrics` serves it.
  std::string scrape() const;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::services
