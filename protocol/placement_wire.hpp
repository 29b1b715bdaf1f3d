#pragma once

// The msgpack form of the `placement_ask` and `placement_answer` bodies (protocol/cluster_wire.hpp,
// docs/cluster.md "Placement by owner").

#include "protocol/cluster_wire.hpp"

#include <msgpack.hpp>

namespace troupe::protocol {

/// Block hashes an ask carries at most (a longer prompt's chain is cut: its first blocks decide
/// where it goes).
inline constexpr std::size_t placement_max_chain = 8192;

/// Candidates an ask carries at most (the sample a pick looks at is smaller).
inline constexpr std::size_t placement_max_candidates = 1024;

namespace detail {

/// Writes `a` as a body: {"id", "role", "bb", "head", "len", "h" (8-byte hashes, binary), "c"}.
void write_placement_ask(msgpack::packer<msgpack::sbuffer>& pk, const placement_ask& a);

/// Reads a body written by `write_placement_ask`; more hashes or candidates than the limits
/// above fail the message (`why`).
bool read_placement_ask(const msgpack::object& body, placement_ask& out, std::string& why);

/// Writes `a` as a body: {"id", "w"}.
void write_placement_answer(msgpack::packer<msgpack::sbuffer>& pk, const placement_answer& a);

/// Reads a body written by `write_placement_answer`.
bool read_placement_answer(const msgpack::object& body, placement_answer& out, std::string& why);

} // namespace detail

} // namespace troupe::protocol
