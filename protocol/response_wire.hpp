#pragma once

// The msgpack form of a `response_update` body (protocol/cluster_wire.hpp), and how a sender
// splits a long list of ids into messages that fit the cluster's message cap.

#include "protocol/cluster_wire.hpp"

#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

namespace troupe::protocol {

/// Bytes `u` takes as a message body, within a few bytes (an upper bound).
std::size_t encoded_size(const response_update& u) noexcept;

/// `responses` in updates whose bodies take at most `max_body_bytes` each, in order; a pair too
/// large for any update on its own (ids longer than the cap allows) is left out and counted in
/// `too_large`.
std::vector<response_update>
split_responses(std::vector<std::pair<std::string, std::string>> responses,
                std::size_t max_body_bytes, std::size_t& too_large);

namespace detail {

/// Writes `u` as a body: {"r": {response id: worker id, ...}}.
void write_response_update(msgpack::packer<msgpack::sbuffer>& pk, const response_update& u);

/// Reads a body written by `write_response_update`. An entry that is not (non-empty id,
/// non-empty worker id) fails the message (`why`).
bool read_response_update(const msgpack::object& body, response_update& out, std::string& why);

} // namespace detail

} // namespace troupe::protocol
