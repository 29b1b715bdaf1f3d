#pragma once

#include <cstdint>
#include <msgpack.hpp>
#include <string_view>

namespace troupe::protocol::msgpack_fields {

/// Packs `s` as a msgpack string.
inline void put(msgpack::packer<msgpack::sbuffer>& pk, std::string_view s) {
  pk.pack_str(static_cast<std::uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

/// The value of the string key `key` in the msgpack map `map`, or null when it has none.
inline const msgpack::object* field(const msgpack::object& map, std::string_view key) {
  for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
    auto& k = map.via.map.ptr[i].key;
    if (k.type == msgpack::type::STR && std::string_view{k.via.str.ptr, k.via.str.size} == key) {
      return &map.via.map.ptr[i].val;
    }
  }
  return nullptr;
}

} // namespace troupe::protocol::msgpack_fields
