#include "apps/troupe/flags.hpp"

#include "actors/policy.hpp"
#include "apps/troupe/security.hpp"
#include "cluster/address.hpp"
#include "cluster/settings.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <iostream>
#include <unistd.h>

namespace troupe::apps {

namespace {

std::chrono::milliseconds secs(double s) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000.0)));
}

/// `--prefill URL [PORT|none]` groups into prefill flags.
bool to_prefill(const std::vector<std::vector<std::string>>& groups,
                std::vector<actors::prefill_flag>& out, std::string& why) {
  for (auto& g : groups) {
    if (g.empty() || g.size() > 2) {
      why = "--prefill takes a URL and an optional bootstrap port";
      return false;
    }
    actors::prefill_flag f{g[0], std::nullopt};
    if (g.size() == 2 && g[1] != "none") {
      unsigned port = 0;
      auto [p, ec] = std::from_chars(g[1].data(), g[1].data() + g[1].size(), port);
      if (ec != std::errc{} || p != g[1].data() + g[1].size() || port == 0 || port > 65535) {
        why =
            "--prefill " + g[0] + ": bootstrap port must be 1-65535 or 'none', got '" + g[1] + "'";
        return false;
      }
      f.bootstrap_port = static_cast<std::uint16_t>(port);
    }
    out.push_back(std::move(f));
  }
  return true;
}

/// Accepts `host:port` (cluster addresses).
CLI::Validator endpoint_check() {
  return CLI::Validator(
      [](std::string& s) {
        std::string why;
        return cluster::parse_endpoint(s, why) ? std::string{} : why;
      },
      "HOST:PORT");
}

} // namespace

std::optional<actors::gateway_config> parse_flags(int argc, char** argv, int& exit_code) {
  actors::gateway_config cfg;
  CLI::App app{"troupe: an LLM inference gateway node (OpenAI, Anthropic and SGLang APIs)"};
  app.option_defaults()->always_capture_default();

  // -- listening --
  app.add_option("--host", cfg.host, "Address to listen on");
  app.add_option("--port", cfg.port, "HTTP port of the API");
  app.add_option("--io-threads", cfg.io_threads, "Threads running sockets and actors")
      ->check(CLI::Range(1u, 256u));
  long long busy_poll_us = cfg.busy_poll.count();
  auto* busy_poll = app.add_option(
      "--busy-poll-us", busy_poll_us,
      "Most microseconds an io thread keeps polling for work before it sleeps (0: sleep at "
      "once). Saves the wake-up of an idle CPU (large in virtual machines); each thread adapts "
      "its poll below this to the gaps it waits through (none where they are longer); never "
      "while other threads wait for a CPU; off under a CPU quota or where the kernel polls idle "
      "CPUs (haltpoll) unless given");
  busy_poll->check(CLI::Range(0LL, 100000LL));
  app.add_option("--send-batch", cfg.send_batch,
                 "Handlers an io thread runs before it sends what they wrote, at most; it sends "
                 "sooner when nothing else is ready (0: every write at once). Workers and "
                 "clients then get a pass's sends together and are woken once for them. One io "
                 "thread only (with several, writes go at once)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{4096}));

  // -- workers --
  app.add_option("--worker-urls", cfg.worker_urls, "Regular workers, e.g. http://host:8000")
      ->expected(1, -1);
  app.add_flag("--pd-disaggregation", cfg.pd_disaggregation,
               "Prefill/decode disaggregation: serve models with --prefill/--decode pairs");
  std::vector<std::vector<std::string>> prefill_groups;
  app.add_option("--prefill", prefill_groups,
                 "Prefill worker: URL [BOOTSTRAP_PORT|none] (repeatable)")
      ->expected(1, 2)
      ->allow_extra_args(false);
  app.add_option("--decode", cfg.decode_urls, "Decode worker URL (repeatable)")->expected(1);
  app.add_option("--pd-runtime", cfg.pd_runtime,
                 "Engine of the --prefill/--decode workers: sglang (dual dispatch) or vllm "
                 "(prefill, then decode with its kv_transfer_params); default: what each "
                 "worker reports (/v1/models owned_by), else sglang")
      ->check(CLI::IsMember({"sglang", "vllm"}));
  app.add_option("--pd-kv-connector", cfg.pd_kv_connector,
                 "vLLM: KV connector of the --prefill workers: NixlConnector (default), "
                 "MooncakeConnector or passthrough")
      ->check(
          CLI::IsMember({"NixlConnector", "nixl", "MooncakeConnector", "mooncake", "passthrough"}));
  app.add_option("--backend", cfg.backend,
                 "What --worker-urls run: sglang or vllm (self-hosted), openai or anthropic "
                 "(external providers using --openai-api-key / --anthropic-api-key)")
      ->check(CLI::IsMember({"sglang", "vllm", "openai", "anthropic"}));
  app.add_option("--openai-urls", cfg.openai_urls,
                 "OpenAI-compatible provider base URLs, e.g. https://api.openai.com")
      ->expected(1, -1);
  app.add_option("--anthropic-urls", cfg.anthropic_urls,
                 "Anthropic-compatible provider base URLs, e.g. https://api.anthropic.com")
      ->expected(1, -1);
  app.add_option("--openai-api-key", cfg.openai_api_key, "API key of the OpenAI providers")
      ->envname("OPENAI_API_KEY");
  app.add_option("--anthropic-api-key", cfg.anthropic_api_key, "API key of the Anthropic providers")
      ->envname("ANTHROPIC_API_KEY");
  app.add_option("--upstream-ca-file", cfg.upstream_ca_file,
                 "PEM CA bundle trusted for https workers, besides the system's")
      ->check(CLI::ExistingFile);

  // -- routing --
  auto policies = actors::accepted_strategy_names();
  app.add_option("--policy", cfg.policy, "Worker selection policy")->check(CLI::IsMember(policies));
  app.add_option("--prefill-policy", cfg.prefill_policy,
                 "Policy for prefill workers (default: --policy)")
      ->check(CLI::IsMember(policies));
  app.add_option("--decode-policy", cfg.decode_policy,
                 "Policy for decode workers (default: --policy)")
      ->check(CLI::IsMember(policies));
  auto& retry = cfg.retry;
  app.add_option("--retry-max-retries", retry.max_retries,
                 "Other workers tried when one fails before anything reached the client");
  long long backoff_ms = retry.initial_backoff.count();
  long long max_backoff_ms = retry.max_backoff.count();
  app.add_option("--retry-initial-backoff-ms", backoff_ms,
                 "Wait before the first retry after a worker's retryable status")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retry-max-backoff-ms", max_backoff_ms, "Longest wait before a retry")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--retry-backoff-multiplier", retry.multiplier,
                 "Each further wait before a retry is this many times longer")
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--retry-jitter-factor", retry.jitter,
                 "Each wait moved at random by up to this share of itself, either way")
      ->check(CLI::Range(0.0, 1.0));
  bool disable_retries = false;
  app.add_flag("--disable-retries", disable_retries, "Never try another worker after a failure");
  auto& tuning = cfg.policy_tuning;
  app.add_option("--cache-aware-mode", tuning.cache_aware_mode,
                 "cache_aware: score (the prefill a worker saves weighed against its queue) or "
                 "smg (smg's thresholds: the longest match until the load is imbalanced)")
      ->check(CLI::IsMember({"score", "smg"}));
  app.add_option("--cache-aware-load-weight", tuning.cache_aware_load_weight,
                 "cache_aware score mode: a request in flight weighs this many mean prompts "
                 "against the prefix a worker holds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cache-aware-stale-margin", tuning.cache_aware_stale_margin,
                 "cache_aware score mode in a cluster: of the requests other nodes reported at a "
                 "holder of the longest match, up to this many count as ended (reports are up to "
                 "a gossip interval old); 0: reports count as they are")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--cache-aware-sample", tuning.cache_aware_sample,
                 "cache_aware: workers of a larger group a pick looks at, drawn at random, "
                 "besides the holders of the prompt's longest match (at most this many)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--cache-threshold,--cache-match-threshold", tuning.cache_threshold,
                 "cache_aware: share of the prompt a worker must hold for the request to follow it")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--balance-abs-threshold,--spill-abs-threshold", tuning.balance_abs_threshold,
                 "cache_aware: load is imbalanced when the busiest worker has more than this many "
                 "requests in flight above the idlest...");
  app.add_option("--balance-rel-threshold,--spill-rel-threshold", tuning.balance_rel_threshold,
                 "...and more than this many times the idlest's load")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-tree-size", tuning.max_tree_size,
                 "cache_aware: bytes of prompt text remembered per worker (LRU beyond)")
      ->check(CLI::PositiveNumber);
  long long eviction_secs = tuning.eviction_interval.count();
  app.add_option("--eviction-interval-secs,--eviction-interval", eviction_secs,
                 "cache_aware: smg's eviction sweep; accepted, unused (Troupe trims on insert)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--least-load-max-waiting-requests", tuning.least_load_max_waiting_requests,
                 "least_load: skip workers with this many requests in flight (0: never)");
  app.add_option("--least-load-kv-pressure-weight", tuning.least_load_kv_pressure_weight,
                 "least_load: smg's KV-pressure weight; accepted, shown, needs engine KV reports")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--least-load-default-throughput", tuning.least_load_default_throughput,
                 "least_load: smg's fallback throughput; accepted, shown")
      ->check(CLI::PositiveNumber);
  app.add_option("--least-load-mean-prefill-tokens", tuning.least_load_mean_prefill_tokens,
                 "least_load: smg's mean prefill estimate; accepted, shown")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefix-token-count", tuning.prefix_token_count,
                 "prefix_hash: tokens of the prompt's head hashed (4 bytes of prompt each)")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefix-hash-load-factor", tuning.prefix_hash_load_factor,
                 "prefix_hash: a worker above this many times the mean load is overloaded...")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefix-hash-balance-abs-threshold", tuning.prefix_hash_balance_abs_threshold,
                 "...and above the mean plus this many requests");
  app.add_option("--cache-boundaries", tuning.cache_boundaries,
                 "prefix_hash: token positions where engines keep reusable prefix state "
                 "(comma-separated); the deepest one a prompt reaches is hashed first")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  long long max_idle_secs = tuning.max_idle.count();
  app.add_option("--max-idle-secs,--sticky-key-idle-secs", max_idle_secs,
                 "manual: a routing key unused this long is forgotten")
      ->check(CLI::PositiveNumber);
  app.add_option("--assignment-mode", tuning.assignment_mode,
                 "manual: how a new routing key picks its worker (random, min_load: fewest "
                 "requests, min_group: fewest keys, delegate: as min_load)")
      ->check(CLI::IsMember({"random", "min_load", "min_group", "delegate"}));

  // -- limits --
  app.add_option("--max-payload-size", cfg.max_payload_size, "Largest request body, in bytes")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-response-size", cfg.max_response_size,
                 "Largest non-streamed worker response, in bytes")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-error-response-size", cfg.max_error_response_size,
                 "Largest worker error body read, in bytes; longer ones are cut and quoted")
      ->check(CLI::PositiveNumber);
  app.add_option("--stream-buffer-bytes", cfg.stream_buffer_bytes,
                 "Unwritten bytes held for a slow client before its stream's worker is no longer "
                 "read (resumed at half)")
      ->check(CLI::PositiveNumber);
  long long client_write_secs = cfg.client_write_timeout.count();
  app.add_option("--client-write-timeout-secs", client_write_secs,
                 "A client whose response writes make no progress this long (it reads nothing) "
                 "is dropped as gone; 0: never")
      ->check(CLI::NonNegativeNumber);
  long long timeout_secs = cfg.request_timeout.count();
  app.add_option("--request-timeout-secs", timeout_secs, "Deadline of a whole request")
      ->check(CLI::PositiveNumber);
  long long grace_secs = cfg.shutdown_grace.count();
  app.add_option("--shutdown-grace-secs", grace_secs,
                 "On SIGTERM, how long requests in flight may finish")
      ->check(CLI::NonNegativeNumber);
  // Connections and request heads (docs/configuration.md, "Limits and time").
  double header_timeout = cfg.request_header_timeout.count() / 1000.0;
  app.add_option("--request-header-timeout-secs", header_timeout,
                 "A request head not complete this long after its first byte (after the "
                 "connection opened, for its first request) gets 408; 0: no limit of its own")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-connections", cfg.max_connections,
                 "Client connections open at once on the API port; more are closed at once; "
                 "0: no limit");
  app.add_option("--max-request-headers", cfg.max_request_headers,
                 "Header fields a request head may have; more get 431")
      ->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
  app.add_option("--max-request-header-bytes", cfg.max_request_header_bytes,
                 "Largest request head (request line and header fields) in bytes; larger "
                 "gets 431")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{8} * 1024 * 1024));

  // -- admission control (smg's flags) --
  app.add_option("--max-concurrent-requests", cfg.max_concurrent_requests,
                 "Data-plane requests running at once on this node; -1 (any value <= 0): no limit");
  app.add_option("--queue-size", cfg.queue_size,
                 "Requests that wait (FIFO) for a slot when all are taken; more get 429 at once");
  double queue_timeout = cfg.queue_timeout.count() / 1000.0;
  app.add_option("--queue-timeout-secs", queue_timeout,
                 "Longest wait for a slot; a request still waiting then gets 408")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rate-limit-tokens-per-second", cfg.rate_limit_per_second,
                 "Requests admitted per second, sustained (a token bucket holding "
                 "--max-concurrent-requests tokens); 0: no rate limit")
      ->check(CLI::NonNegativeNumber);

  // -- security --
  app.add_option("--api-key", cfg.api_key,
                 "Require 'Authorization: Bearer KEY' on the data plane and worker management "
                 "(prefer the environment variable: a flag shows in the process list)")
      ->envname("TROUPE_API_KEY");
  app.add_flag("--allow-unauthenticated", cfg.allow_unauthenticated,
               "Start although a listener beyond loopback has no authentication: the API "
               "without --api-key, the metrics port (it has none); a warning says so");
  app.add_option("--admin-api-key", cfg.admin_api_key,
                 "Require 'Authorization: Bearer KEY' on /admin/* (default: --api-key)");

  // -- TLS for clients and workers (smg's flags; docs/configuration.md, "TLS") --
  app.add_option("--tls-cert-path", cfg.tls_cert_path,
                 "Serve the API and /admin over HTTPS with this PEM certificate chain (with "
                 "--tls-key-path)");
  app.add_option("--tls-key-path", cfg.tls_key_path, "PEM private key of --tls-cert-path");
  app.add_flag("--prometheus-tls", cfg.prometheus_tls,
               "Serve GET /metrics over HTTPS as well, with --tls-cert-path/--tls-key-path");
  app.add_option("--client-cert-path", cfg.client_cert_path,
                 "PEM client certificate the gateway presents to https workers (mutual TLS; with "
                 "--client-key-path)");
  app.add_option("--client-key-path", cfg.client_key_path, "PEM private key of --client-cert-path");
  app.add_option("--ca-cert-paths", cfg.ca_cert_paths,
                 "PEM CA bundles trusted for https workers' certificates, besides the system's")
      ->expected(1, -1);

  // -- health and circuit breaker --
  auto& w = cfg.worker;
  double health_interval = w.health_interval.count() / 1000.0;
  double health_timeout = w.health_timeout.count() / 1000.0;
  double cb_timeout = w.cb_timeout.count() / 1000.0;
  app.add_option("--health-check-interval-secs", health_interval, "Between worker health checks")
      ->check(CLI::PositiveNumber);
  app.add_option("--health-check-timeout-secs", health_timeout, "Deadline of one health check")
      ->check(CLI::PositiveNumber);
  app.add_option("--health-check-jitter-factor", w.health_jitter,
                 "Each worker's check interval moved at random by up to this share of itself, "
                 "either way, so that workers registered together are not checked together (0: "
                 "exactly every interval)")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--health-check-endpoint", w.health_endpoint, "Path probed on workers");
  app.add_option("--health-failure-threshold", w.health_failure_threshold,
                 "Failed checks before a worker is unhealthy")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--health-success-threshold", w.health_success_threshold,
                 "Passed checks before an unhealthy worker is healthy again")
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--cb-failure-threshold", w.cb_failure_threshold,
                 "Consecutive failed requests that open a worker's circuit breaker")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--cb-success-threshold", w.cb_success_threshold,
                 "Successes in half-open that close the breaker")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--cb-timeout-duration-secs", cb_timeout,
                 "How long an open breaker stays open before probing")
      ->check(CLI::PositiveNumber);
  bool disable_breaker = false;
  app.add_flag("--disable-circuit-breaker", disable_breaker,
               "Never take a worker out of rotation for failed requests (health checks still do)");

  // -- observability --
  app.add_option("--prometheus-host", cfg.prometheus_host, "Address of the metrics listener");
  app.add_option("--prometheus-port", cfg.prometheus_port, "Port of GET /metrics (0: off)");
  app.add_option("--log-level", cfg.log_level, "Log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_flag("--log-json", cfg.log_json, "Log one JSON object per line");
  app.add_option("--request-id-headers", cfg.request_id_headers,
                 "Headers a client's request id is taken from, the first one set")
      ->expected(1, -1);

  // -- cluster --
  app.add_option("--node-name", cfg.node_name,
                 "This node's name in the cluster (default: host:port of the API)");
  app.add_option("--cluster-port", cfg.cluster_port,
                 "Port where cluster peers reach this node (0: no cluster, the node runs alone)");
  app.add_option("--cluster-peers", cfg.cluster_peers,
                 "Seed members, host:port of their cluster ports (comma-separated or repeated)")
      ->delimiter(',')
      ->check(endpoint_check());
  app.add_option("--cluster-advertise", cfg.cluster_advertise,
                 "host:port peers reach this node at (default: --cluster-host, or the machine's "
                 "name when it is 0.0.0.0, with --cluster-port)")
      ->check(endpoint_check());
  double cluster_heartbeat = cfg.cluster_heartbeat.count() / 1000.0;
  double cluster_timeout = cfg.cluster_timeout.count() / 1000.0;
  double cluster_gossip = cfg.cluster_gossip.count() / 1000.0;
  app.add_option(
         "--cluster-heartbeat-secs", cluster_heartbeat,
         "Heartbeats between linked nodes, and the longest gap between load reports (a member "
         "silent for two is suspect: its load stops counting)")
      ->check(CLI::Range(0.05, 60.0));
  app.add_option("--cluster-timeout-secs", cluster_timeout,
                 "A peer silent this long is dropped (down), even with its connection open (a hung "
                 "node is down after this plus a heartbeat)")
      ->check(CLI::Range(0.2, 600.0));
  app.add_option("--cluster-gossip-interval-secs", cluster_gossip,
                 "Load reports are sent at most this often while load changes")
      ->check(CLI::Range(0.01, 10.0));
  double cluster_ack_timeout = cfg.cluster_ack_timeout.count() / 1000.0;
  app.add_option("--cluster-ack-timeout-secs", cluster_ack_timeout,
                 "POST /workers and DELETE wait this long for a peer to confirm the change, then "
                 "fall back on --state-file (or answer 503)")
      ->check(CLI::Range(0.05, 60.0));
  double cluster_clock_skew = cfg.cluster_clock_skew.count() / 1000.0;
  app.add_option("--cluster-max-clock-skew-secs", cluster_clock_skew,
                 "Registration records versioned further ahead of this node's clock are "
                 "refused (from peers and from the state file)")
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--state-file", cfg.state_file,
                 "Persist the worker registry here (msgpack) and restore it at start-up");
  app.add_option("--cluster-host", cfg.cluster_host,
                 "Address the cluster port listens on (default: --host)");
  app.add_option("--cluster-tls-cert", cfg.cluster_tls_cert,
                 "This node's certificate (PEM); with --cluster-tls-key and --cluster-tls-ca, "
                 "cluster links are mutually authenticated TLS");
  app.add_option("--cluster-tls-key", cfg.cluster_tls_key, "Private key of --cluster-tls-cert");
  app.add_option("--cluster-tls-ca", cfg.cluster_tls_ca,
                 "The cluster's CA (PEM): only peers whose certificate chains to it are members");
  app.add_option("--cluster-tls-key-passphrase", cfg.cluster_tls_key_passphrase,
                 "Passphrase of an encrypted --cluster-tls-key (prefer the environment variable)")
      ->envname("TROUPE_CLUSTER_TLS_KEY_PASSPHRASE");
  app.add_flag("--cluster-insecure", cfg.cluster_insecure,
               "Allow a cluster port without TLS on an address beyond loopback (links are then "
               "unauthenticated and api keys are not replicated)");
  app.add_option("--cluster-max-message-bytes", cfg.cluster_max_message_bytes,
                 "Largest cluster message decoded (larger ones are dropped and counted)")
      ->check(CLI::Range(std::size_t{64} * 1024, std::size_t{1} << 30));
  app.add_option("--cluster-prefix-block-bytes", cfg.cluster_prefix_block_bytes,
                 "Shared prefix view of cache_aware policies: prompt bytes per hashed block "
                 "(the same on every node; 0: each node knows only what it routed)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
  app.add_option("--cluster-prefix-max-blocks-per-worker", cfg.cluster_prefix_max_blocks_per_worker,
                 "Blocks the shared prefix view remembers per worker (least recently used "
                 "evicted)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_option("--cluster-prefix-max-blocks", cfg.cluster_prefix_max_blocks,
                 "Blocks the shared prefix view remembers per policy, all workers together")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_option("--cluster-prefix-max-bytes-per-tick", cfg.cluster_prefix_max_bytes_per_tick,
                 "Bytes of prefix hashes a node sends per gossip tick (beyond: dropped, counted)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  app.add_option("--cluster-prefix-snapshot-blocks", cfg.cluster_prefix_snapshot_blocks,
                 "Prefix blocks this node's picks placed most recently that a member linking "
                 "later is sent (0: none; a newcomer then learns from later picks only)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  app.add_option("--cluster-placement", cfg.policy_tuning.cluster_placement,
                 "cache_aware in a cluster: who places a prompt's pick. off: this node; first: "
                 "one node (the placer) when no worker holds enough of it; all: the owner of the "
                 "prompt's prefix group, every pick (docs/cluster.md, \"Placement by owner\")")
      ->check(CLI::IsMember({"off", "first", "all"}));
  double placement_timeout_ms = static_cast<double>(cfg.policy_tuning.placement_timeout.count());
  app.add_option("--cluster-placement-timeout-ms", placement_timeout_ms,
                 "A pick waits this long for the owner's answer, then decides by itself")
      ->check(CLI::Range(1.0, 1000.0));
  // The Responses affinity (docs/configuration.md, "Responses API"; docs/cluster.md).
  app.add_option("--response-affinity-capacity", cfg.response_affinity_capacity,
                 "Response ids whose worker a node remembers (the oldest forgotten first); on a "
                 "cluster node also the ids waiting to be sent to the members")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  long long response_ttl_secs = cfg.response_affinity_ttl.count();
  app.add_option("--response-affinity-ttl-secs", response_ttl_secs,
                 "A remembered response id is forgotten this long after it was learned (a "
                 "request naming it then searches the workers); 0: only the capacity bounds it")
      ->check(CLI::NonNegativeNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    return std::nullopt;
  }
  std::string why;
  if (!to_prefill(prefill_groups, cfg.prefill_urls, why)) {
    std::cerr << "troupe: " << why << "\n";
    exit_code = 2;
    return std::nullopt;
  }
  if ((!cfg.prefill_urls.empty() || !cfg.decode_urls.empty()) && !cfg.pd_disaggregation) {
    std::cerr << "troupe: --prefill and --decode need --pd-disaggregation\n";
    exit_code = 2;
    return std::nullopt;
  }
  cfg.busy_poll = std::chrono::microseconds{busy_poll_us};
  cfg.busy_poll_given = busy_poll->count() > 0;
  cfg.policy_tuning.placement_timeout =
      std::chrono::milliseconds{static_cast<long long>(placement_timeout_ms)};
  cfg.cluster_heartbeat = secs(cluster_heartbeat);
  cfg.cluster_timeout = secs(cluster_timeout);
  cfg.cluster_gossip = secs(cluster_gossip);
  cfg.cluster_ack_timeout = secs(cluster_ack_timeout);
  cfg.cluster_clock_skew = secs(cluster_clock_skew);
  if (cfg.cluster_timeout <= cfg.cluster_heartbeat) {
    std::cerr << "troupe: --cluster-timeout-secs must be longer than --cluster-heartbeat-secs\n";
    exit_code = 2;
    return std::nullopt;
  }
  if (!cfg.cluster_peers.empty() && cfg.cluster_port == 0) {
    std::cerr << "troupe: --cluster-peers needs --cluster-port\n";
    exit_code = 2;
    return std::nullopt;
  }
  if (cfg.cluster_prefix_max_bytes_per_tick + 64 * 1024 > cfg.cluster_max_message_bytes) {
    std::cerr << "troupe: --cluster-prefix-max-bytes-per-tick must leave 64 KiB of "
                 "--cluster-max-message-bytes free (a tick's hashes travel in one message)\n";
    exit_code = 2;
    return std::nullopt;
  }
  if (auto problem = cluster::check_settings(cfg)) {
    std::cerr << "troupe: " << *problem << "\n";
    exit_code = 2;
    return std::nullopt;
  }
  if (cfg.node_name.empty()) {
    // Listening on every interface: the machine's name tells nodes apart, not 0.0.0.0.
    auto host = cfg.host;
    char name[256] = {};
    if ((host == "0.0.0.0" || host == "::") && ::gethostname(name, sizeof(name) - 1) == 0) {
      host = name;
    }
    cfg.node_name = host + ":" + std::to_string(cfg.port);
  }
  if (cfg.rate_limit_per_second > 0 && cfg.max_concurrent_requests <= 0) {
    std::cerr << "troupe: --rate-limit-tokens-per-second needs --max-concurrent-requests > 0 "
                 "(the bucket holds that many tokens: the largest burst)\n";
    exit_code = 2;
    return std::nullopt;
  }
  cfg.queue_timeout = secs(queue_timeout);
  retry.initial_backoff = std::chrono::milliseconds(backoff_ms);
  retry.max_backoff = std::chrono::milliseconds(max_backoff_ms);
  if (disable_retries) {
    retry.max_retries = 0;
  }
  tuning.eviction_interval = std::chrono::seconds(eviction_secs);
  tuning.max_idle = std::chrono::seconds(max_idle_secs);
  {
    auto decode = cfg.decode_policy.empty() ? cfg.policy : cfg.decode_policy;
    if (decode == "bucket" && cfg.pd_disaggregation) {
      // smg's rule: buckets split prompt lengths, which only the prefill half computes.
      std::cerr << "troupe: --decode-policy (default: --policy) cannot be bucket: buckets "
                   "split prompt lengths, which only the prefill half computes\n";
      exit_code = 2;
      return std::nullopt;
    }
  }
  cfg.request_timeout = std::chrono::seconds(timeout_secs);
  cfg.response_affinity_ttl = std::chrono::seconds(response_ttl_secs);
  cfg.client_write_timeout = std::chrono::seconds(client_write_secs);
  cfg.shutdown_grace = std::chrono::seconds(grace_secs);
  cfg.request_header_timeout = secs(header_timeout);
  if (!load_tls(cfg, why) || !check_exposed_listeners(cfg, why)) {
    std::cerr << "troupe: " << why << "\n";
    exit_code = 2;
    return std::nullopt;
  }
  w.health_interval = secs(health_interval);
  w.health_timeout = secs(health_timeout);
  w.cb_timeout = secs(cb_timeout);
  w.cb_enabled = !disable_breaker;
  return cfg;
}

} // namespace troupe::apps
