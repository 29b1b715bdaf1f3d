#pragma once

#include "actors/gateway_config.hpp"
#include "cluster/tls_files.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster {

/// True for an address only this machine reaches: `localhost`, 127.0.0.0/8, `::1`.
bool is_loopback(std::string_view host);

/// Where the cluster port listens: `--cluster-host`, else `--host`.
std::string bind_host(const actors::gateway_config& cfg);

/// The TLS files the flags name.
tls_files tls_files_of(const actors::gateway_config& cfg);

/// True when cluster links are mutually authenticated TLS.
bool uses_tls(const actors::gateway_config& cfg);

/// The start-up checks of the cluster flags, run before the actor system exists: TLS files go
/// together and are valid (see `check_tls_files`); a cluster port without TLS listens on
/// loopback unless `--cluster-insecure` says otherwise. Returns the first problem, naming its
/// flag, or nothing.
std::optional<std::string> check_settings(const actors::gateway_config& cfg);

} // namespace troupe::cluster
