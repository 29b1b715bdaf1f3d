#include "gateway/gateway.hpp"

#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "gateway/allocator_decay.hpp"
#include "gateway/endpoints/endpoints.hpp"
#include "gateway/metrics_endpoint.hpp"
#include "gateway/request_admission.hpp"
#include "services/logs.hpp"
#include "transport/http_server.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/fmt/fmt.h>
#include <stdexcept>

namespace troupe::gateway {

namespace {

/// The worker specs given on the command line, validated (a bad one stops start-up).
std::vector<protocol::worker_spec> initial_workers(const actors::gateway_config& cfg) {
  std::vector<protocol::worker_spec> out;
  auto push = [&](protocol::worker_spec spec) {
    std::string why;
    if (!protocol::check(spec, why)) {
      throw std::runtime_error("invalid worker '" + spec.url + "': " + why);
    }
    out.push_back(std::move(spec));
  };
  // `--backend openai|anthropic` makes `--worker-urls` external providers (as smg's flag);
  // `--openai-urls` / `--anthropic-urls` add providers next to self-hosted workers.
  auto provider = [&](protocol::provider_kind kind, const std::string& url) {
    const auto& key =
        kind == protocol::provider_kind::anthropic ? cfg.anthropic_api_key : cfg.openai_api_key;
    if (key.empty()) {
      logs::gateway().warn(
          "provider {} has no api key (--{}-api-key): its model list cannot be read", url,
          protocol::to_string(kind));
    }
    push({url, protocol::worker_type::regular, {}, {}, kind, key, {}, {}, {}});
  };
  auto backend = protocol::parse_provider(cfg.backend).value_or(protocol::provider_kind::none);
  for (auto& url : cfg.worker_urls) {
    if (backend != protocol::provider_kind::none) {
      provider(backend, url);
    } else {
      push({url, protocol::worker_type::regular, {}, {}, {}, {}, {}, {}, {}});
    }
  }
  for (auto& url : cfg.openai_urls) {
    provider(protocol::provider_kind::openai, url);
  }
  for (auto& url : cfg.anthropic_urls) {
    provider(protocol::provider_kind::anthropic, url);
  }
  auto runtime = protocol::parse_runtime(cfg.pd_runtime);
  auto connector =
      protocol::parse_kv_connector(cfg.pd_kv_connector).value_or(protocol::kv_connector::unset);
  for (auto& p : cfg.prefill_urls) {
    protocol::worker_spec spec{
        p.url, protocol::worker_type::prefill, p.bootstrap_port, {}, {}, {}, {}, {}, {}};
    spec.runtime = runtime;
    spec.connector = connector;
    push(std::move(spec));
  }
  for (auto& url : cfg.decode_urls) {
    protocol::worker_spec spec{url, protocol::worker_type::decode, {}, {}, {}, {}, {}, {}, {}};
    spec.runtime = runtime;
    push(std::move(spec));
  }
  return out;
}

} // namespace

struct gateway::impl {
  caf::actor_system& sys;
  boost::asio::io_context& ioc;
  actors::gateway_config cfg;
  actors::services_ptr svc;
  std::unique_ptr<transport::http_server> server;
  std::unique_ptr<boost::asio::steady_timer> drain_timer;
  std::unique_ptr<transport::http_server> metrics_server; ///< `GET /metrics`.
  /// Freed pages back to the system once a second (allocator_decay.hpp).
  allocator_decay decay;

  impl(caf::actor_system& s, boost::asio::io_context& io, actors::gateway_config c)
      : sys(s), ioc(io), cfg(std::move(c)), decay(io, std::chrono::seconds(1)) {}
};

gateway::gateway(caf::actor_system& sys, boost::asio::io_context& ioc, actors::gateway_config cfg)
    : impl_(std::make_unique<impl>(sys, ioc, std::move(cfg))) {}

gateway::~gateway() = default;

void gateway::start() {
  auto& d = *impl_;
  auto& cfg = d.cfg;
  auto workers = initial_workers(cfg);
  if (!cfg.worker.tls) { // the flags load it (with a client certificate, if given)
    std::string tls_why;
    cfg.worker.tls = transport::make_client_tls_context(cfg.upstream_ca_file, tls_why);
    if (!cfg.worker.tls) {
      throw std::runtime_error(tls_why);
    }
  }
  auto policy_or = [&](const std::string& p) { return p.empty() ? cfg.policy : p; };
  auto& tuning = cfg.policy_tuning;
  if (cfg.cluster_port != 0) {
    // A clustered node's cache_aware policies keep the shared prefix view (docs/cluster.md).
    tuning.prefix_block_bytes = cfg.cluster_prefix_block_bytes;
    tuning.prefix_max_blocks_per_worker = cfg.cluster_prefix_max_blocks_per_worker;
    tuning.prefix_max_blocks = cfg.cluster_prefix_max_blocks;
    tuning.prefix_max_pending = cfg.cluster_prefix_max_bytes_per_tick / 8;
    // An owner counts a worker it chose for another node until that node's next load report.
    tuning.placement_reserve = cfg.cluster_gossip;
  }
  auto view = std::make_shared<actors::fleet_view>();
  // Round robin, random and power of two pick in the request actor itself (direct pickers).
  auto regular_link =
      actors::make_policy_link(d.sys, cfg.policy, protocol::worker_type::regular, tuning, view);
  auto prefill_link = actors::make_policy_link(d.sys, policy_or(cfg.prefill_policy),
                                               protocol::worker_type::prefill, tuning, view);
  auto decode_link = actors::make_policy_link(d.sys, policy_or(cfg.decode_policy),
                                              protocol::worker_type::decode, tuning, view);
  auto& regular = regular_link.actor;
  auto& prefill = prefill_link.actor;
  auto& decode = decode_link.actor;
  auto stats = std::make_shared<services::metrics>();
  actors::watch_fleet(*stats, view);
  stats->set_cluster_members(1, 0, 0); // this node, until the cluster lands
  auto inspector = actors::make_inspector(d.sys, {}, stats);
  cfg.worker.use_strands = cfg.io_threads > 1;
  if (cfg.node_name.empty()) {
    cfg.node_name = cfg.host + ":" + std::to_string(cfg.port);
  }
  auto registry = actors::make_registry(d.sys, d.ioc, view, {regular, prefill, decode}, cfg.worker,
                                        inspector, cfg.node_name);
  actors::register_with(inspector, "registry", "registry", registry);
  actors::register_with(inspector, "policy", "policy:regular", regular);
  actors::register_with(inspector, "policy", "policy:prefill", prefill);
  actors::register_with(inspector, "policy", "policy:decode", decode);
  actors::gateway_services svc{d.sys,
                               d.ioc,
                               cfg,
                               view,
                               registry,
                               regular,
                               prefill,
                               decode,
                               std::make_shared<services::request_tracker>(),
                               std::make_shared<services::response_affinity>(
                                   cfg.response_affinity_capacity, cfg.response_affinity_ttl)};
  svc.regular_picker = regular_link.picker;
  svc.prefill_picker = prefill_link.picker;
  svc.decode_picker = decode_link.picker;
  svc.metrics = stats;
  svc.inspector = inspector;
  svc.admission = make_admission(d.ioc, cfg);
  if (svc.admission) {
    stats->watch_admission(svc.admission);
    const auto& lim = svc.admission->limits();
    logs::gateway().info("admission control: {} request(s) at once, {} may wait up to {} ms{}",
                         lim.max_active, lim.max_queued, lim.queue_timeout.count(),
                         lim.rate_per_second > 0
                             ? fmt::format(", {:g} admitted per second", lim.rate_per_second)
                             : std::string{});
  }
  d.svc = std::make_shared<const actors::gateway_services>(std::move(svc));
  stats->watch_system([&sys = d.sys] { return sys.registry().running(); },
                      [tracker = d.svc->tracker] { return tracker->size(); });
  if (cfg.prometheus_port != 0) {
    transport::server_options mopts;
    mopts.host = cfg.prometheus_host;
    mopts.port = cfg.prometheus_port;
    mopts.body_limit = 64 * 1024; // scrapes have no body
    mopts.tls = cfg.prometheus_tls ? cfg.server_tls : nullptr;
    d.metrics_server =
        std::make_unique<transport::http_server>(d.ioc, mopts, make_metrics_handler(stats));
    if (auto ec = d.metrics_server->start()) {
      // The default port (29000) is taken by the first node on a host: say what to do.
      std::string hint = ec == boost::asio::error::address_in_use
                             ? " (another node on this host? give each its own "
                               "--prometheus-port, or 0 for no metrics listener)"
                             : "";
      throw std::runtime_error("cannot serve metrics on " + cfg.prometheus_host + ":" +
                               std::to_string(cfg.prometheus_port) + ": " + ec.message() + hint);
    }
  }

  auto routes = std::make_shared<route_table>();
  add_data_plane_routes(*routes);
  add_info_routes(*routes);
  add_worker_routes(*routes);
  add_fleet_op_routes(*routes);
  add_admin_routes(*routes);

  transport::server_options opts;
  opts.host = cfg.host;
  opts.port = cfg.port;
  opts.body_limit = cfg.max_payload_size;
  opts.use_strands = cfg.io_threads > 1;
  opts.stream_buffer_bytes = cfg.stream_buffer_bytes;
  opts.write_timeout = cfg.client_write_timeout;
  opts.flow_stats = std::make_shared<transport::client_flow_stats>();
  stats->watch_client_flow(opts.flow_stats);
  opts.header_timeout = cfg.request_header_timeout;
  opts.max_header_fields = cfg.max_request_headers;
  opts.header_limit = cfg.max_request_header_bytes;
  opts.max_connections = cfg.max_connections;
  opts.conn_stats = std::make_shared<transport::connection_stats>();
  stats->watch_connections(opts.conn_stats);
  stats->watch_io_loops(d.svc->io);
  opts.tls = cfg.server_tls;
  d.server = std::make_unique<transport::http_server>(d.ioc, opts, make_front(d.svc, routes));
  if (auto ec = d.server->start()) {
    throw std::runtime_error("cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) +
                             ": " + ec.message());
  }
  for (auto& spec : workers) {
    auto url = spec.url;
    actors::ask(
        d.sys, registry, [](const std::string&) {},
        [url](caf::error& e) {
          auto err = actors::to_api_error(e);
          if (err.code == protocol::error_code::conflict) {
            // Restored from the state file, or learnt from a peer, before the flag was read.
            logs::gateway().info("worker {} is registered already", url);
            return;
          }
          logs::gateway().error("cannot register worker {}: {}", url, err.message);
        },
        add_atom_v, std::move(spec));
  }
  d.decay.start();
  logs::gateway().info("troupe listening on {}://{}:{} (policy {}, {} worker(s) configured)",
                       cfg.server_tls ? "https" : "http", cfg.host, d.server->port(), cfg.policy,
                       workers.size());
  if (d.metrics_server) {
    logs::gateway().info("metrics on {}://{}:{}/metrics", cfg.prometheus_tls ? "https" : "http",
                         cfg.prometheus_host, d.metrics_server->port());
  }
}

void gateway::shutdown(std::function<void()> done) {
  auto& d = *impl_;
  if (d.server) {
    d.server->stop();
  }
  auto deadline = std::chrono::steady_clock::now() + d.cfg.shutdown_grace;
  d.drain_timer = std::make_unique<boost::asio::steady_timer>(d.ioc);
  auto finish = [this, done] {
    auto& d = *impl_;
    if (d.svc) {
      caf::anon_send(d.svc->registry, stop_atom_v);
      caf::anon_send_exit(d.svc->regular_policy, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(d.svc->prefill_policy, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(d.svc->decode_policy, caf::exit_reason::user_shutdown);
      caf::anon_send_exit(d.svc->inspector, caf::exit_reason::user_shutdown);
    }
    // Scrapes stay possible while requests drain: the drain is worth watching.
    if (d.metrics_server) {
      d.metrics_server->stop();
    }
    d.decay.stop();
    done();
  };
  // Poll until the requests in flight are over or the grace period ends.
  auto wait = std::make_shared<std::function<void()>>();
  *wait = [this, deadline, finish, wait] {
    auto& d = *impl_;
    auto in_flight = d.svc ? d.svc->tracker->size() : 0;
    if (in_flight == 0 || std::chrono::steady_clock::now() >= deadline) {
      if (in_flight > 0) {
        logs::gateway().warn("shutting down with {} request(s) still in flight", in_flight);
      }
      // Break the self-reference. That destroys this very closure: keep what it still needs.
      auto then = finish;
      *wait = nullptr;
      return then();
    }
    d.drain_timer->expires_after(std::chrono::milliseconds(50));
    d.drain_timer->async_wait([wait](boost::system::error_code) {
      if (*wait) {
        (*wait)();
      }
    });
  };
  (*wait)();
}

std::uint16_t gateway::port() const {
  return impl_->server ? impl_->server->port() : 0;
}

actors::services_ptr gateway::services() const {
  return impl_->svc;
}

} // namespace troupe::gateway
