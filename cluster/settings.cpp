#include "cluster/settings.hpp"

#include <arpa/inet.h>

namespace troupe::cluster {

bool is_loopback(std::string_view host) {
  if (host == "localhost") {
    return true;
  }
  std::string h{host};
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  return ::inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string bind_host(const actors::gateway_config& cfg) {
  return cfg.cluster_host.empty() ? cfg.host : cfg.cluster_host;
}

tls_files tls_files_of(const actors::gateway_config& cfg) {
  return {cfg.cluster_tls_cert, cfg.cluster_tls_key, cfg.cluster_tls_ca,
          cfg.cluster_tls_key_passphrase};
}

bool uses_tls(const actors::gateway_config& cfg) {
  return tls_files_of(cfg).all();
}

std::optional<std::string> check_settings(const actors::gateway_config& cfg) {
  auto files = tls_files_of(cfg);
  if (files.any() && !files.all()) {
    std::string missing;
    for (auto [flag, value] :
         {std::pair{"--cluster-tls-cert", &files.cert}, std::pair{"--cluster-tls-key", &files.key},
          std::pair{"--cluster-tls-ca", &files.ca}}) {
      if (value->empty()) {
        missing += missing.empty() ? flag : std::string{" and "} + flag;
      }
    }
    return missing + (missing.find(" and ") == std::string::npos ? " is" : " are") +
           " missing: --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together "
           "(mutual TLS needs this node's certificate, its key and the cluster CA)";
  }
  if (cfg.cluster_port == 0) {
    if (files.any()) {
      return std::string{"--cluster-tls-cert needs --cluster-port (TLS secures cluster links)"};
    }
    if (!cfg.cluster_host.empty()) {
      return std::string{"--cluster-host needs --cluster-port"};
    }
    return std::nullopt;
  }
  if (files.all()) {
    if (cfg.cluster_insecure) {
      return std::string{"--cluster-insecure contradicts --cluster-tls-cert/-key/-ca: give one "
                         "or the other"};
    }
    return check_tls_files(files);
  }
  auto host = bind_host(cfg);
  if (!is_loopback(host) && !cfg.cluster_insecure) {
    return "--cluster-port " + std::to_string(cfg.cluster_port) + " would listen on " +
           (host.empty() ? std::string{"every interface"} : host) +
           " without TLS: whoever reaches it could join the cluster, read its workers' api keys "
           "and send users' requests elsewhere. Give --cluster-tls-cert, --cluster-tls-key and "
           "--cluster-tls-ca (scripts/cluster-certs.sh makes them), listen on loopback with "
           "--cluster-host 127.0.0.1, or accept the risk with --cluster-insecure";
  }
  return std::nullopt;
}

} // namespace troupe::cluster
