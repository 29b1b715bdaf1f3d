#pragma once

#include "actors/gateway_config.hpp"

#include <string>

namespace troupe::apps {

/// Loads the TLS files the flags name (`--tls-cert-path`/`--tls-key-path`, `--client-cert-path`/
/// `--client-key-path`, `--ca-cert-paths`, `--upstream-ca-file`) into the configuration's TLS
/// contexts. False on a bad combination or a bad file, with `why` naming the flag and the file.
bool load_tls(actors::gateway_config& cfg, std::string& why);

/// False (with `why` naming the flags) for a listener beyond loopback without authentication,
/// unless `--allow-unauthenticated`: the API without `--api-key`, the metrics port.
bool check_exposed_listeners(const actors::gateway_config& cfg, std::string& why);

/// Logs a warning for each listener bound beyond loopback that nothing guards: the API without
/// `--api-key`, the metrics port (it has no authentication), plain HTTP carrying keys.
void warn_exposed_listeners(const actors::gateway_config& cfg);

/// Raises the soft limit of open files to the hard one (each client connection holds one, and
/// usually one to a worker), and warns when `max_connections` cannot fit in it.
void raise_fd_limit(std::size_t max_connections);

} // namespace troupe::apps
