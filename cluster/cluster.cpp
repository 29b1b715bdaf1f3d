#include "cluster/cluster.hpp"

#include "cluster/address.hpp"
#include "cluster/state_file.hpp"

#include <caf/io/middleman.hpp>
#include <spdlog/spdlog.h>
#include <stdexcept>
#include <unistd.h>

namespace troupe::cluster {

namespace {

/// The address peers reach this node at: `--cluster-advertise`, else the API host (the
/// machine's name when the API listens on every interface) with the cluster port.
std::string advertised(const actors::gateway_config& cfg, std::uint16_t port) {
  if (!cfg.cluster_advertise.empty()) {
    return cfg.cluster_advertise;
  }
  auto host = cfg.host;
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    char name[256] = {};
    host = ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  }
  return to_string(endpoint{host, port});
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
}

runtime::runtime(caf::actor_system& sys, actors::services_ptr svc)
    : sys_(sys), svc_(std::move(svc)) {}

runtime::~runtime() = default;

void runtime::start() {
  auto& cfg = svc_->cfg;
  node_config ncfg;
  ncfg.name = cfg.node_name;
  ncfg.api_address = cfg.host + ":" + std::to_string(cfg.port);
  ncfg.networked = cfg.cluster_port != 0;
  ncfg.seeds = cfg.cluster_peers;
  ncfg.state_file = cfg.state_file;
  ncfg.keepalive = cfg.cluster_heartbeat;
  ncfg.gossip_interval = cfg.cluster_gossip;
  // Our own reports arrive every heartbeat at least: two missed ones make a member suspect.
  ncfg.suspect_after = 2 * cfg.cluster_heartbeat + cfg.cluster_gossip;
  // CAF closes a silent link after the connection timeout; this is the backstop.
  ncfg.down_after = cfg.cluster_timeout + cfg.cluster_heartbeat;
  ncfg.connect_timeout = cfg.cluster_timeout;
  ncfg.cluster_address = ncfg.networked ? advertised(cfg, cfg.cluster_port) : std::string{};

  if (!cfg.state_file.empty()) {
    std::string why;
    auto records = load_state(cfg.state_file, why);
    if (!why.empty()) {
      spdlog::error("cluster: {}", why);
    }
    if (!records.empty()) {
      spdlog::info("cluster: restored {} registration record(s) from {}", records.size(),
                   cfg.state_file);
      caf::anon_send(svc_->registry, merge_atom_v, actors::record_batch(std::move(records)));
    }
  }

  node_ = make_node(sys_, ncfg, node_deps{svc_->registry, svc_->cluster, svc_->metrics});
  actors::register_with(svc_->inspector, "cluster_node", "cluster_node", node_);
  if (!ncfg.networked) {
    return;
  }
  // Blocking, on the main thread before the io threads run: the middleman's own actor and
  // thread do the work, nothing waits for an asio thread.
  auto host = cfg.host == "0.0.0.0" || cfg.host == "::" ? std::string{} : cfg.host;
  auto port = sys_.middleman().publish(caf::actor_cast<peer_actor>(node_), cfg.cluster_port,
                                       host.empty() ? nullptr : host.c_str(), true);
  if (!port) {
    caf::anon_send(node_, stop_atom_v);
    throw std::runtime_error("cannot listen for cluster peers on " + cfg.host + ":" +
                             std::to_string(cfg.cluster_port) + ": " + sys_.render(port.error()));
  }
  port_ = *port;
  spdlog::info("cluster: node {} on {} (cluster port {}), {} seed(s)", ncfg.name,
               ncfg.cluster_address, port_, ncfg.seeds.size());
}

void runtime::stop() {
  if (node_) {
    caf::anon_send(node_, stop_atom_v);
  }
}

std::uint16_t runtime::port() const {
  return port_;
}

} // namespace troupe::cluster
