#pragma once

#include "protocol/cluster_wire.hpp"

#include <utility>

namespace troupe::protocol::testing {

/// A message from node-a (incarnation 7) carrying `body`: what the wire tests encode.
template <class Body> cluster_message with(Body body) {
  cluster_message m;
  m.from = "node-a";
  m.incarnation = 7;
  m.body = std::move(body);
  return m;
}

} // namespace troupe::protocol::testing
