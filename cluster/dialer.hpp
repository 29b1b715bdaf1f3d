#pragma once

#include "cluster/node.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <chrono>

namespace troupe::cluster {

/// How a one-dial dialer reaches a peer.
struct dial_setup {
  caf::actor basp;                             ///< The middleman's BASP broker ("BASP").
  bool tls = false;                            ///< Through CAF's OpenSSL module.
  std::chrono::milliseconds tcp_timeout{1000}; ///< For the TCP connection alone.
};

/// Spawns a dialer for one connect, on a thread of its own: it first makes (and closes) a TCP
/// connection of its own within `tcp_timeout`, so an address that black-holes packets fails in
/// that time; only then does it ask a middleman actor of its own (plain or OpenSSL, on the
/// shared BASP broker) for the link, whose connect CAF 0.17 makes blocking. Either way no other
/// dial waits behind this one, as every dial through the middleman's one actor did. It answers
/// once and quits (its middleman actor with it).
dialer_actor make_one_dial(caf::actor_system& sys, const dial_setup& setup);

} // namespace troupe::cluster
