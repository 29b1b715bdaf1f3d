#pragma once

// The msgpack form of a `prefix_update` body (protocol/cluster_wire.hpp), kept apart from the
// rest of the cluster codec. Internal to protocol/.

#include "protocol/cluster_wire.hpp"

#include <msgpack.hpp>
#include <string>

namespace troupe::protocol::detail {

/// Writes `u` as a body: {"bb": block bytes, "w": [{"id": worker, "h": bin of 8-byte hashes,
/// little-endian}]}.
void write_prefix_update(msgpack::packer<msgpack::sbuffer>& pk, const prefix_update& u);

/// Reads a body written by `write_prefix_update`. A worker entry whose hashes are not a whole
/// number of 8 bytes fails the message (`why`).
bool read_prefix_update(const msgpack::object& body, prefix_update& out, std::string& why);

} // namespace troupe::protocol::detail
