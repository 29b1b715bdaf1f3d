#pragma once

// The msgpack form of a `prefix_update` body (protocol/cluster_wire.hpp), kept apart from the
// rest of the cluster codec, and how a sender splits a long update into messages that fit the
// cluster's message cap.

#include "protocol/cluster_wire.hpp"

#include <msgpack.hpp>
#include <string>
#include <vector>

namespace troupe::protocol {

/// `u` as updates whose bodies take at most `max_body_bytes` each (a worker's hashes split over
/// several when they must), in order, each with `u`'s block size, role and snapshot flag; the
/// hashes of a worker whose id alone would not fit are left out and counted in `too_large`.
std::vector<prefix_update> split_prefixes(prefix_update u, std::size_t max_body_bytes,
                                          std::uint64_t& too_large);

} // namespace troupe::protocol

namespace troupe::protocol::detail {

/// Writes `u` as a body: {"bb": block bytes, "role": policy role (when set), "snap": true (when
/// a snapshot), "w": [{"id": worker, "h": bin of 8-byte hashes, little-endian}]}.
void write_prefix_update(msgpack::packer<msgpack::sbuffer>& pk, const prefix_update& u);

/// Reads a body written by `write_prefix_update`. A worker entry whose hashes are not a whole
/// number of 8 bytes fails the message (`why`).
bool read_prefix_update(const msgpack::object& body, prefix_update& out, std::string& why);

} // namespace troupe::protocol::detail
