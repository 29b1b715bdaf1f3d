#include "apps/troupe/security.hpp"

#include "services/logs.hpp"
#include "transport/tls.hpp"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <sys/resource.h>

namespace troupe::apps {

namespace {

using part = transport::tls_setup_error::part;

/// Both flags of a pair, or neither.
bool paired(const std::string& a, const char* a_flag, const std::string& b, const char* b_flag,
            std::string& why) {
  if (a.empty() == b.empty()) {
    return true;
  }
  why = std::string(a_flag) + " and " + b_flag + " go together: " + (a.empty() ? a_flag : b_flag) +
        " is missing";
  return false;
}

/// True for a loopback address (127.0.0.0/8, ::1) or `localhost`.
bool loopback(const std::string& host) {
  if (host == "localhost") {
    return true;
  }
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

/// The API beyond loopback without a key.
bool api_unguarded(const actors::gateway_config& cfg) {
  return !loopback(cfg.host) && cfg.api_key.empty();
}

/// A metrics port beyond loopback (it has no authentication).
bool metrics_unguarded(const actors::gateway_config& cfg) {
  return cfg.prometheus_port != 0 && !loopback(cfg.prometheus_host);
}

} // namespace

bool load_tls(actors::gateway_config& cfg, std::string& why) {
  if (!paired(cfg.tls_cert_path, "--tls-cert-path", cfg.tls_key_path, "--tls-key-path", why) ||
      !paired(cfg.client_cert_path, "--client-cert-path", cfg.client_key_path, "--client-key-path",
              why)) {
    return false;
  }
  if (cfg.prometheus_tls && cfg.tls_cert_path.empty()) {
    why = "--prometheus-tls serves the metrics with the API's certificate: it needs "
          "--tls-cert-path and --tls-key-path";
    return false;
  }
  transport::tls_setup_error err;
  if (!cfg.tls_cert_path.empty()) {
    cfg.server_tls = transport::make_server_tls_context(cfg.tls_cert_path, cfg.tls_key_path, err);
    if (!cfg.server_tls) {
      why = std::string(err.what == part::certificate ? "--tls-cert-path " : "--tls-key-path ") +
            err.file + ": " + err.reason;
      return false;
    }
  }
  transport::client_tls_files files;
  files.ca_files = cfg.ca_cert_paths;
  if (!cfg.upstream_ca_file.empty()) {
    files.ca_files.push_back(cfg.upstream_ca_file);
  }
  files.cert_file = cfg.client_cert_path;
  files.key_file = cfg.client_key_path;
  cfg.worker.tls = transport::make_client_tls_context(files, err);
  if (!cfg.worker.tls) {
    switch (err.what) {
    case part::certificate:
      why = "--client-cert-path " + err.file + ": " + err.reason;
      break;
    case part::key:
    case part::key_mismatch:
      why = "--client-key-path " + err.file + ": " + err.reason;
      break;
    case part::ca: {
      auto given = std::find(cfg.ca_cert_paths.begin(), cfg.ca_cert_paths.end(), err.file);
      why = std::string(given != cfg.ca_cert_paths.end() ? "--ca-cert-paths "
                                                         : "--upstream-ca-file ") +
            err.file + ": " + err.reason;
      break;
    }
    case part::system:
      why = err.reason;
      break;
    }
    return false;
  }
  return true;
}

bool check_exposed_listeners(const actors::gateway_config& cfg, std::string& why) {
  if (cfg.allow_unauthenticated) {
    return true;
  }
  if (api_unguarded(cfg)) {
    why = "the API would listen on " + cfg.host +
          " without authentication: set --api-key (or TROUPE_API_KEY; clients send "
          "'Authorization: Bearer KEY' or 'x-api-key: KEY'), listen on loopback (--host "
          "127.0.0.1), or accept the risk with --allow-unauthenticated";
    return false;
  }
  if (metrics_unguarded(cfg)) {
    why = "metrics would be served on " + cfg.prometheus_host +
          " without authentication (the metrics port has none): keep them on loopback "
          "(--prometheus-host 127.0.0.1), turn them off (--prometheus-port 0), or accept the risk "
          "with --allow-unauthenticated (a firewall in front)";
    return false;
  }
  return true;
}

void warn_exposed_listeners(const actors::gateway_config& cfg) {
  if (api_unguarded(cfg)) {
    logs::gateway().warn("the API listens on {} without --api-key: anyone who reaches the port "
                         "can use the workers and register new ones",
                         cfg.host);
  }
  if (!loopback(cfg.host) && !cfg.server_tls) {
    logs::gateway().warn("the API listens on {} over plain HTTP: API keys and prompts cross the "
                         "network in the clear (--tls-cert-path/--tls-key-path serve HTTPS)",
                         cfg.host);
  }
  if (metrics_unguarded(cfg)) {
    logs::gateway().warn("metrics are served on {} without authentication: keep that port behind a "
                         "firewall or on loopback",
                         cfg.prometheus_host);
  }
}

void raise_fd_limit(std::size_t max_connections) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    return;
  }
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    ::getrlimit(RLIMIT_NOFILE, &lim);
  }
  // A connection to a worker per client connection, and some for the rest.
  auto needed = 2 * static_cast<rlim_t>(max_connections) + 256;
  if (max_connections > 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed) {
    logs::gateway().warn(
        "--max-connections {} needs about {} open files, the limit is {}: accepting "
        "will pause when files run out (raise `ulimit -n`, or lower --max-connections)",
        max_connections, needed, lim.rlim_cur);
  }
}

} // namespace troupe::apps
