#pragma once

#include "actors/policies/policy_config.hpp"
#include "actors/request/retry_policy.hpp"
#include "actors/worker_proxy.hpp"

#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::actors {

/// A prefill worker given on the command line: its URL and optional bootstrap port.
struct prefill_flag {
  std::string url;
  std::optional<std::uint16_t> bootstrap_port;
};

/// Every setting of a gateway node, declared once (apps/troupe/flags.cpp maps the CLI onto it;
/// docs/configuration.md documents it).
struct gateway_config {
  // -- listening --
  std::string host = "127.0.0.1";
  std::uint16_t port = 30000;
  unsigned io_threads = 1;
  /// The longest an io thread polls for work before it sleeps (`--busy-poll-us`,
  /// transport/io_loop.hpp; each thread adapts its poll below it, transport/poll_window.hpp);
  /// 0: it sleeps at once.
  std::chrono::microseconds busy_poll{300};
  /// `--busy-poll-us` was given: kept under a CPU quota too (else busy polling is off there).
  bool busy_poll_given = false;
  /// Handlers an io thread runs before it sends what they wrote (`--send-batch`, 0: every write
  /// at once; transport/send_phase.hpp). One io thread only.
  std::size_t send_batch = 32;

  // -- workers --
  std::vector<std::string> worker_urls;
  bool pd_disaggregation = false;
  std::vector<prefill_flag> prefill_urls;
  std::vector<std::string> decode_urls;
  /// The engine of the `--prefill`/`--decode` workers (`--pd-runtime`): `sglang`, `vllm`, or
  /// empty for what each worker says of itself (docs/pd.md).
  std::string pd_runtime;
  /// vLLM: the KV connector of the `--prefill` workers (`--pd-kv-connector`), empty: unset.
  std::string pd_kv_connector;
  /// What `worker_urls` run: `sglang` or `vllm` (self-hosted), or `openai` / `anthropic`
  /// (external providers, with `openai_api_key` / `anthropic_api_key`), as smg's `--backend`.
  std::string backend = "sglang";
  std::vector<std::string> openai_urls;    ///< OpenAI-compatible providers (mixed fleets).
  std::vector<std::string> anthropic_urls; ///< Anthropic-compatible providers (mixed fleets).
  std::string openai_api_key;              ///< Key of the OpenAI providers (`OPENAI_API_KEY`).
  std::string anthropic_api_key; ///< Key of the Anthropic providers (`ANTHROPIC_API_KEY`).
  std::string upstream_ca_file;  ///< Extra CA bundle trusted for `https` workers.

  // -- routing --
  std::string policy = "round_robin";
  std::string prefill_policy;  ///< Empty: same as `policy`.
  std::string decode_policy;   ///< Empty: same as `policy`.
  retry_config retry;          ///< Other workers tried after a failure, and the waits between.
  policy_config policy_tuning; ///< cache_aware settings (docs/policies.md).

  // -- limits --
  std::size_t max_payload_size = 512u * 1024 * 1024;  ///< Request bodies.
  std::size_t max_response_size = 256u * 1024 * 1024; ///< Non-streamed worker responses.
  std::size_t max_error_response_size = 64u * 1024;   ///< Worker error bodies: cut beyond.
  /// Unwritten bytes a client connection holds before its stream's worker is no longer read.
  std::size_t stream_buffer_bytes = 1024u * 1024;
  /// A client whose response writes make no progress this long is dropped as gone; 0: never.
  std::chrono::seconds client_write_timeout{300};
  std::chrono::seconds request_timeout{1800};
  std::chrono::seconds shutdown_grace{10};
  /// A request head must be complete this long after its first byte (after the accept for a
  /// connection's first request), else 408; 0: only the idle timeout bounds it.
  std::chrono::milliseconds request_header_timeout{60000};
  std::size_t max_connections = 8192;    ///< Client connections open at once; 0: no limit.
  std::size_t max_request_headers = 100; ///< Header fields of a request head, at most (431).
  std::size_t max_request_header_bytes = 64u * 1024; ///< Size of a request head, at most (431).

  // -- admission control (smg's flags; docs/architecture.md) --
  int max_concurrent_requests = -1; ///< Data-plane requests running at once; <= 0: no limit.
  std::size_t queue_size = 100;     ///< Requests waiting for a slot; 0: refused at once (429).
  std::chrono::milliseconds queue_timeout{60000}; ///< Longest wait for a slot, then 408.
  double rate_limit_per_second = 0; ///< Admissions per second, sustained; 0: no rate limit.

  // -- security --
  std::string api_key;       ///< Data plane and worker management need it as a Bearer token.
  std::string admin_api_key; ///< `/admin/*` needs it; empty: `api_key` guards them too.

  // -- TLS for clients and workers (smg's flags; apps/troupe/security.cpp loads the files) --
  std::string tls_cert_path;              ///< HTTPS certificate chain of the API port.
  std::string tls_key_path;               ///< Its private key.
  bool prometheus_tls = false;            ///< The metrics port serves HTTPS too.
  std::string client_cert_path;           ///< Client certificate shown to https workers.
  std::string client_key_path;            ///< Its private key.
  std::vector<std::string> ca_cert_paths; ///< CA bundles trusted for https workers.
  std::shared_ptr<boost::asio::ssl::context> server_tls; ///< Null: the API is plain HTTP.

  // -- observability --
  std::string prometheus_host = "127.0.0.1";
  std::uint16_t prometheus_port = 29000;
  std::string log_level = "info";
  bool log_json = false;
  /// Headers a client's request id is taken from, the first one set (smg's defaults); the id
  /// goes on to the worker and back to the client as `x-request-id`.
  std::vector<std::string> request_id_headers{"x-request-id", "x-correlation-id", "x-trace-id",
                                              "request-id"};

  // -- worker proxies --
  worker_proxy_config worker;

  // -- cluster (docs/cluster.md) --
  std::string node_name; ///< This node's name in the cluster; flags default it to host:port.
  std::uint16_t cluster_port = 0; ///< Port of the cluster node actor; 0: the node runs alone.
  std::vector<std::string> cluster_peers; ///< Seed members, host:port of their cluster ports.
  std::string cluster_advertise;          ///< host:port peers reach this node at; empty: derived.
  std::string state_file;                 ///< Where the registry is persisted; empty: nowhere.
  std::chrono::milliseconds cluster_heartbeat{250};    ///< Heartbeats between linked nodes.
  std::chrono::milliseconds cluster_timeout{1500};     ///< Silence after which a link is dropped.
  std::chrono::milliseconds cluster_gossip{100};       ///< Load reports, at most this often.
  std::chrono::milliseconds cluster_ack_timeout{2000}; ///< A write waits this for a peer's ack.
  std::chrono::milliseconds cluster_clock_skew{60000}; ///< Records further ahead: refused.
  std::string cluster_host; ///< Bind address of the cluster port; empty: `host`.
  // Mutual TLS between nodes (all three files, or none: docs/cluster.md "Securing a cluster").
  std::string cluster_tls_cert;           ///< This node's certificate (PEM chain).
  std::string cluster_tls_key;            ///< Its private key (PEM).
  std::string cluster_tls_ca;             ///< The cluster CA: peers must chain to it.
  std::string cluster_tls_key_passphrase; ///< For an encrypted key.
  /// Allows a cluster port without TLS on an address other than loopback.
  bool cluster_insecure = false;
  /// Allows the API without `api_key`, and the metrics port (it has no authentication), on an
  /// address other than loopback: otherwise start-up refuses them.
  bool allow_unauthenticated = false;
  /// Largest gossip message decoded; BASP frames are bounded just above it.
  std::size_t cluster_max_message_bytes = 8u * 1024 * 1024;
  // The shared prefix view of cache_aware policies (docs/cluster.md, "Shared prefix view").
  std::size_t cluster_prefix_block_bytes = 128;                 ///< Block size; 0: no shared view.
  std::size_t cluster_prefix_max_blocks_per_worker = 65536;     ///< Blocks remembered per worker.
  std::size_t cluster_prefix_max_blocks = std::size_t{1} << 20; ///< Per policy, all workers.
  std::size_t cluster_prefix_max_bytes_per_tick = 256 * 1024;   ///< Hashes sent per gossip tick.
  std::size_t cluster_prefix_snapshot_blocks = 65536; ///< Own placements told to a new member.
  // The Responses affinity (services/response_affinity.hpp; shared by cluster nodes).
  std::size_t response_affinity_capacity = 100000; ///< Ids remembered (and queued for peers).
  std::chrono::seconds response_affinity_ttl{0};   ///< 0: no expiry.
};

} // namespace troupe::actors
