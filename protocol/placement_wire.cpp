#include "protocol/placement_wire.hpp"

#include "protocol/msgpack_fields.hpp"

namespace troupe::protocol {

namespace {

using msgpack_fields::field;
using msgpack_fields::put;

bool get_u64(const msgpack::object& body, std::string_view key, std::uint64_t& out,
             std::string_view what, std::string& why) {
  if (auto* o = field(body, key)) {
    if (o->type != msgpack::type::POSITIVE_INTEGER) {
      why = std::string(what) + ": field '" + std::string(key) + "' is not a non-negative integer";
      return false;
    }
    out = o->via.u64;
  }
  return true;
}

bool get_str(const msgpack::object& body, std::string_view key, std::string& out,
             std::string_view what, std::string& why) {
  if (auto* o = field(body, key)) {
    if (o->type != msgpack::type::STR) {
      why = std::string(what) + ": field '" + std::string(key) + "' is not a string";
      return false;
    }
    out.assign(o->via.str.ptr, o->via.str.size);
  }
  return true;
}

} // namespace

namespace detail {

void write_placement_ask(msgpack::packer<msgpack::sbuffer>& pk, const placement_ask& a) {
  pk.pack_map(7);
  put(pk, "id");
  pk.pack_uint64(a.id);
  put(pk, "role");
  put(pk, a.role);
  put(pk, "bb");
  pk.pack_uint64(a.block_bytes);
  put(pk, "head");
  pk.pack_uint64(a.head);
  put(pk, "len");
  pk.pack_uint64(a.prompt_bytes);
  put(pk, "h");
  std::string bin(8 * a.chain.size(), '\0');
  for (std::size_t i = 0; i < a.chain.size(); ++i) {
    for (int b = 0; b < 8; ++b) {
      bin[8 * i + b] = static_cast<char>((a.chain[i] >> (8 * b)) & 0xff);
    }
  }
  pk.pack_bin(static_cast<std::uint32_t>(bin.size()));
  pk.pack_bin_body(bin.data(), static_cast<std::uint32_t>(bin.size()));
  put(pk, "c");
  pk.pack_array(static_cast<std::uint32_t>(a.candidates.size()));
  for (auto& c : a.candidates) {
    put(pk, c);
  }
}

bool read_placement_ask(const msgpack::object& body, placement_ask& out, std::string& why) {
  constexpr std::string_view what = "placement ask";
  if (body.type != msgpack::type::MAP) {
    why = "placement ask is not a map";
    return false;
  }
  std::uint64_t bb = 0;
  if (!get_u64(body, "id", out.id, what, why) || !get_str(body, "role", out.role, what, why) ||
      !get_u64(body, "bb", bb, what, why) || !get_u64(body, "head", out.head, what, why) ||
      !get_u64(body, "len", out.prompt_bytes, what, why)) {
    return false;
  }
  if (bb > UINT32_MAX) {
    why = "placement ask: field 'bb' is not a 32-bit integer";
    return false;
  }
  out.block_bytes = static_cast<std::uint32_t>(bb);
  if (auto* h = field(body, "h")) {
    if (h->type != msgpack::type::BIN || h->via.bin.size % 8 != 0 ||
        h->via.bin.size / 8 > placement_max_chain) {
      why = "placement ask: field 'h' is not a binary string of at most " +
            std::to_string(placement_max_chain) + " 8-byte hashes";
      return false;
    }
    auto* p = reinterpret_cast<const unsigned char*>(h->via.bin.ptr);
    out.chain.resize(h->via.bin.size / 8);
    for (std::size_t k = 0; k < out.chain.size(); ++k) {
      std::uint64_t v = 0;
      for (int b = 7; b >= 0; --b) {
        v = (v << 8) | p[8 * k + b];
      }
      out.chain[k] = v;
    }
  }
  if (auto* c = field(body, "c")) {
    if (c->type != msgpack::type::ARRAY || c->via.array.size > placement_max_candidates) {
      why = "placement ask: field 'c' is not an array of at most " +
            std::to_string(placement_max_candidates) + " worker ids";
      return false;
    }
    out.candidates.reserve(c->via.array.size);
    for (std::uint32_t i = 0; i < c->via.array.size; ++i) {
      auto& x = c->via.array.ptr[i];
      if (x.type != msgpack::type::STR || x.via.str.size == 0) {
        why = "placement ask: a candidate is not a worker id";
        return false;
      }
      out.candidates.emplace_back(x.via.str.ptr, x.via.str.size);
    }
  }
  return true;
}

void write_placement_answer(msgpack::packer<msgpack::sbuffer>& pk, const placement_answer& a) {
  pk.pack_map(2);
  put(pk, "id");
  pk.pack_uint64(a.id);
  put(pk, "w");
  put(pk, a.worker);
}

bool read_placement_answer(const msgpack::object& body, placement_answer& out, std::string& why) {
  constexpr std::string_view what = "placement answer";
  if (body.type != msgpack::type::MAP) {
    why = "placement answer is not a map";
    return false;
  }
  return get_u64(body, "id", out.id, what, why) && get_str(body, "w", out.worker, what, why);
}

} // namespace detail

} // namespace troupe::protocol
