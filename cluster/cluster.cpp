#include "cluster/cluster.hpp"

#include "cluster/address.hpp"
#include "cluster/dialer.hpp"
#include "cluster/frame_guard.hpp"
#include "cluster/settings.hpp"
#include "cluster/state_file.hpp"
#include "cluster/tls_error_queue.hpp"
#include "cluster/version_guard.hpp"
#include "services/logs.hpp"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <stdexcept>
#include <unistd.h>

namespace troupe::cluster {

namespace {

/// Room for CAF's own part of a BASP message around the largest gossip payload (sender,
/// receiver, message type, the string's length), and for its handshakes.
constexpr std::uint32_t basp_overhead = 64 * 1024;

/// The address peers reach this node at: `--cluster-advertise`, else the cluster host (the
/// machine's name when it listens on every interface) with the cluster port.
std::string advertised(const actors::gateway_config& cfg, std::uint16_t port) {
  if (!cfg.cluster_advertise.empty()) {
    return cfg.cluster_advertise;
  }
  auto host = bind_host(cfg);
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    char name[256] = {};
    host = ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  }
  return to_string(endpoint{host, port});
}

node_config node_settings(const actors::gateway_config& cfg) {
  node_config ncfg;
  ncfg.name = cfg.node_name;
  ncfg.api_address = cfg.host + ":" + std::to_string(cfg.port);
  ncfg.networked = cfg.cluster_port != 0;
  ncfg.tls = uses_tls(cfg);
  if (ncfg.tls) {
    ncfg.tls_identity = tls_files_of(cfg);
  }
  ncfg.seeds = cfg.cluster_peers;
  ncfg.state_file = cfg.state_file;
  ncfg.keepalive = cfg.cluster_heartbeat;
  ncfg.gossip_interval = cfg.cluster_gossip;
  ncfg.ack_timeout = cfg.cluster_ack_timeout;
  ncfg.max_version_ahead = cfg.cluster_clock_skew;
  // Our own reports arrive every heartbeat at least: two missed ones make a member suspect.
  ncfg.suspect_after = 2 * cfg.cluster_heartbeat + cfg.cluster_gossip;
  // CAF closes a silent link after the connection timeout; this is the backstop.
  ncfg.down_after = cfg.cluster_timeout + cfg.cluster_heartbeat;
  // A dial (TCP, TLS and BASP handshakes) on a busy machine may take longer than a silent
  // link is tolerated.
  ncfg.connect_timeout = std::max(cfg.cluster_timeout, std::chrono::milliseconds{3000});
  // The peer that dials this pair had a full backoff and a dial attempt to do so.
  ncfg.passive_dial_after = ncfg.reconnect_max + ncfg.connect_timeout;
  ncfg.max_message_bytes = cfg.cluster_max_message_bytes;
  ncfg.prefix_block_bytes = static_cast<std::uint32_t>(cfg.cluster_prefix_block_bytes);
  ncfg.prefix_max_bytes_per_tick = cfg.cluster_prefix_max_bytes_per_tick;
  ncfg.prefix_snapshot_blocks = cfg.cluster_prefix_snapshot_blocks;
  ncfg.placement_timeout = cfg.policy_tuning.placement_timeout;
  ncfg.response_snapshot_ids = cfg.response_affinity_capacity;
  // A member's registry takes a whole sync (or two: one may wait for the sync rate limit).
  ncfg.snapshot_wait = 2 * ncfg.full_sync_interval;
  ncfg.cluster_address = ncfg.networked ? advertised(cfg, cfg.cluster_port) : std::string{};
  return ncfg;
}

} // namespace

bool wanted(const actors::gateway_config& cfg) {
  return cfg.cluster_port != 0 || !cfg.state_file.empty();
}

void configure(caf::actor_system_config& sys_cfg, const actors::gateway_config& cfg) {
  if (cfg.cluster_port == 0) {
    return;
  }
  sys_cfg.load<caf::io::middleman>();
  // BASP heartbeats keep idle links alive and let CAF close a link whose peer went silent
  // (a hung process keeps its TCP connection open: only the timeout notices it).
  sys_cfg.set("middleman.heartbeat-interval", caf::timespan{cfg.cluster_heartbeat});
  sys_cfg.set("middleman.connection-timeout", caf::timespan{cfg.cluster_timeout});
  // CAF would otherwise dial nodes it hears of by itself, without TLS: the node dials.
  sys_cfg.set("middleman.enable-automatic-connections", false);
  set_frame_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(cfg.cluster_max_message_bytes + basp_overhead, UINT32_MAX)));
  if (uses_tls(cfg)) {
    sys_cfg.load<caf::openssl::manager>();
    sys_cfg.openssl_certificate = cfg.cluster_tls_cert;
    sys_cfg.openssl_key = cfg.cluster_tls_key;
    sys_cfg.openssl_cafile = cfg.cluster_tls_ca;
    sys_cfg.openssl_passphrase = cfg.cluster_tls_key_passphrase;
  }
}

runtime::runtime(caf::actor_system& sys, actors::services_ptr svc)
    : sys_(sys), svc_(std::move(svc)) {}

runtime::~runtime() = default;

void runtime::start() {
  auto& cfg = svc_->cfg;
  auto ncfg = node_settings(cfg);
  if (!cfg.state_file.empty()) {
    std::string why;
    auto records = load_state(cfg.state_file, why);
    if (!why.empty()) {
      logs::cluster().error("{}", why);
    }
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    for (auto& line : version_guard{cfg.cluster_clock_skew}.remove_ahead(records, now)) {
      logs::cluster().error("state file {}: not restored: {} (--cluster-max-clock-skew-secs)",
                            cfg.state_file, line);
    }
    if (!records.empty()) {
      logs::cluster().info("restored {} registration record(s) from {}", records.size(),
                           cfg.state_file);
      caf::anon_send(svc_->registry, merge_atom_v, actors::record_batch(std::move(records)));
    }
  }

  node_deps deps{svc_->registry,
                 svc_->cluster,
                 svc_->metrics,
                 {},
                 std::make_shared<refusal_counts>(svc_->metrics),
                 {},
                 {},
                 svc_->responses}; // its counts, and (networked) the members' ids
  if (ncfg.networked && ncfg.prefix_block_bytes > 0) {
    // The cache_aware policies keep a shared prefix view (gateway.cpp turns it on).
    auto policy_or = [&](const std::string& p) { return p.empty() ? cfg.policy : p; };
    auto share = [&](const std::string& name, const std::string& policy,
                     const actors::policy_actor& handle) {
      if (policy == "cache_aware") {
        deps.prefix_policies.emplace_back(name, handle);
      }
    };
    share("regular", cfg.policy, svc_->regular_policy);
    share("prefill", policy_or(cfg.prefill_policy), svc_->prefill_policy);
    share("decode", policy_or(cfg.decode_policy), svc_->decode_policy);
  }
  if (ncfg.networked && svc_->responses) {
    // Ids this node learns go to the members too (cluster/response_gossip.cpp).
    svc_->responses->share_with_peers(cfg.response_affinity_capacity);
  }
  if (ncfg.networked) {
    // Each dial on a thread of its own, with its own timeout (cluster/dialer.hpp). The BASP
    // broker is taken here, on the main thread, while nothing else touches the middleman.
    dial_setup setup{sys_.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP")),
                     ncfg.tls, std::max(ncfg.connect_timeout / 2, std::chrono::milliseconds{1})};
    auto* sys = &sys_;
    deps.new_dialer = [sys, setup] { return make_one_dial(*sys, setup); };
  }
  node_ = make_node(sys_, ncfg, std::move(deps));
  actors::register_with(svc_->inspector, "cluster_node", "cluster_node", node_.node);
  if (!ncfg.networked) {
    return;
  }
  // Blocking, on the main thread before the io threads run: the middleman's own actor and
  // thread do the work, nothing waits for an asio thread.
  auto host = bind_host(cfg);
  const char* in = host == "0.0.0.0" || host == "::" || host.empty() ? nullptr : host.c_str();
  auto port = ncfg.tls ? caf::openssl::publish(node_.endpoint, cfg.cluster_port, in, true)
                       : sys_.middleman().publish(node_.endpoint, cfg.cluster_port, in, true);
  if (!port) {
    caf::anon_send(node_.node, stop_atom_v);
    throw std::runtime_error("cannot listen for cluster peers on " + host + ":" +
                             std::to_string(cfg.cluster_port) + ": " + sys_.render(port.error()));
  }
  port_ = *port;
  logs::cluster().info("node {} on {} (cluster port {} on {}), {} seed(s)", ncfg.name,
                       ncfg.cluster_address, port_, in ? host : std::string{"every interface"},
                       ncfg.seeds.size());
  if (ncfg.tls) {
    logs::cluster().info("mutual TLS with the CA in {} (this node: {}); any certificate that "
                         "CA signed is a member, whatever its name",
                         cfg.cluster_tls_ca, describe_certificate(cfg.cluster_tls_cert));
    if (!tls_error_queue_guard_active()) {
      logs::cluster().warn("OpenSSL's error queue is not guarded in this build: a failed TLS "
                           "handshake may close healthy cluster links (docs/cluster.md)");
    }
  } else if (cfg.cluster_insecure) {
    logs::cluster().warn("--cluster-insecure: links on {} are plain TCP without "
                         "authentication; anyone who reaches the port can join. Api keys are not "
                         "replicated",
                         in ? host : std::string{"every interface"});
  } else {
    logs::cluster().info("links are plain TCP on loopback (development); api keys are not "
                         "replicated");
  }
  if (frame_guard_active()) {
    logs::cluster().info("BASP frames over {} bytes, routed messages and messages to named "
                         "system actors are refused",
                         frame_limit());
  } else {
    logs::cluster().warn("CAF's BASP header check is not guarded in this build: a peer can "
                         "make this node allocate up to 4 GiB per connection (docs/cluster.md)");
  }
}

void runtime::stop() {
  if (node_.node) {
    caf::anon_send(node_.node, stop_atom_v);
  }
}

std::uint16_t runtime::port() const {
  return port_;
}

} // namespace troupe::cluster
