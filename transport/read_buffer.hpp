#pragma once

// The size of the reads of a message body. Beast reads into a flat_buffer as much as the buffer
// has room for (`beast::read_size`: its free capacity, at least 512 bytes), and a parser that
// takes every byte out at once never lets it grow: a 100 KB body read into the buffer a head
// left behind is ~120 reads of ~800 bytes, each a syscall and an asio completion. Giving the
// buffer room for the body first makes it a few reads; trimming it afterwards keeps an idle
// connection as small as before.

#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/optional.hpp>
#include <cstddef>
#include <cstdint>

namespace troupe::transport {

/// The least room a head read has (a head in one read, not in reads of 512 bytes).
inline constexpr std::size_t head_read_size = 4096;

/// Largest read of a body; also the most a buffer grows for one.
inline constexpr std::size_t body_read_size = 64 * 1024;

/// What a buffer may keep between messages (a head and some pipelined bytes).
inline constexpr std::size_t idle_buffer_size = 16 * 1024;

/// Gives `buffer` room for the next read of a body with `remaining` bytes to come (unknown:
/// chunked, or until the connection closes).
inline void make_room_for_body(boost::beast::flat_buffer& buffer,
                               boost::optional<std::uint64_t> remaining) {
  auto want = remaining
                  ? static_cast<std::size_t>(std::min<std::uint64_t>(*remaining, body_read_size))
                  : idle_buffer_size;
  if (buffer.capacity() - buffer.size() < want) {
    buffer.reserve(buffer.size() + want);
  }
}

/// Gives back what a large body made `buffer` take, once the message is read.
inline void trim_after_body(boost::beast::flat_buffer& buffer) {
  if (buffer.capacity() > idle_buffer_size && buffer.size() <= idle_buffer_size) {
    buffer.shrink_to_fit();
  }
}

} // namespace troupe::transport
