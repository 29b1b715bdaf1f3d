#pragma once

#include "cluster/tls_files.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>
#include <chrono>
#include <cstdint>
#include <string>

namespace troupe::cluster {

/// Tries one TLS handshake with `host:port` as a node with `files` would, and says how it
/// ends: OpenSSL's reason, which CAF does not pass on when a dial fails (e.g. "certificate
/// verify failed: unable to get local issuer certificate" when the peer's certificate is not
/// from our CA, "tlsv1 alert unknown ca" when ours is not from the peer's). Blocking, bounded by
/// `timeout` for the connect and for the handshake: call it off the actor and io threads.
std::string diagnose_tls_handshake(const std::string& host, std::uint16_t port,
                                   const tls_files& files, std::chrono::milliseconds timeout);

/// Runs one diagnosis on a thread of its own and answers with its text, then quits.
using tls_diagnosis_actor = caf::typed_actor<
    /// Diagnose a handshake with host:port.
    caf::replies_to<caf::connect_atom, std::string, std::uint16_t>::with<std::string>>;

/// Spawns a detached (own thread) diagnosis actor for one question.
tls_diagnosis_actor make_tls_diagnosis(caf::actor_system& sys, tls_files files,
                                       std::chrono::milliseconds timeout);

} // namespace troupe::cluster
