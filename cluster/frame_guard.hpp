#pragma once

#include <cstdint>

namespace troupe::cluster {

/// A guard on the BASP frames CAF 0.17 reads from cluster connections.
///
/// CAF sizes its read buffer from the payload length a peer's 32-byte header claims, up to
/// 4 GiB, before any of the payload arrived: one connection can make a node allocate gigabytes.
/// TLS keeps strangers from sending a header at all, but not a peer holding a certificate. CAF
/// checks every header it reads with `caf::io::basp::valid(const header&)`, called through the
/// dynamic linker from libcaf_io; troupe defines that function itself (frame_guard.cpp), lets
/// CAF's own check run, and also refuses (CAF then closes the connection, having allocated
/// nothing):
/// - a payload longer than the limit set here;
/// - a routed message (one relayed for a third node: this cluster is a full mesh, and a routed
///   message may name any sender, this node's own actors included);
/// - a message to a named system actor other than CAF's spawn server (the config server would
///   take any key a peer puts).
/// Process-wide, as CAF's check is: set it once, before the actor system is built.
void set_frame_limit(std::uint32_t max_payload_bytes) noexcept;

/// The payload limit in force (4 GiB - 1 until set).
std::uint32_t frame_limit() noexcept;

/// True when CAF's header check resolves to the guard in this process (the dynamic linker let
/// the executable's definition take precedence, as it does unless libcaf_io was linked with
/// -Bsymbolic).
bool frame_guard_active() noexcept;

/// Frames refused so far, by cause (counted on CAF's network thread; read anywhere).
struct frames_refused {
  std::uint64_t too_large = 0;
  std::uint64_t routed = 0;
  std::uint64_t named = 0;
};
frames_refused frame_refusals() noexcept;

} // namespace troupe::cluster
