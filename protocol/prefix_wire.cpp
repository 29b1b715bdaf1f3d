#include "protocol/prefix_wire.hpp"

#include "protocol/msgpack_fields.hpp"

#include <cstring>

namespace troupe::protocol {

namespace {

using msgpack_fields::field;
using msgpack_fields::put;

} // namespace

std::size_t encoded_size(const prefix_update& u) noexcept {
  std::size_t n = 16 + (u.role.empty() ? 0 : 10 + u.role.size()) + (u.snapshot ? 6 : 0);
  for (auto& w : u.workers) {
    n += 16 + w.worker.size() + 8 * w.hashes.size();
  }
  return n;
}

std::vector<prefix_update> split_prefixes(prefix_update u, std::size_t max_body_bytes,
                                          std::uint64_t& too_large) {
  std::vector<prefix_update> out;
  auto head = encoded_size(prefix_update{u.block_bytes, {}, u.role, u.snapshot});
  std::size_t used = 0;
  auto fresh = [&] {
    out.push_back(prefix_update{u.block_bytes, {}, u.role, u.snapshot});
    used = head;
  };
  for (auto& w : u.workers) {
    auto entry = 16 + w.worker.size();
    if (head + entry + 8 > max_body_bytes) {
      too_large += w.hashes.size(); // a worker id longer than a message
      continue;
    }
    std::size_t i = 0;
    while (i < w.hashes.size()) {
      if (out.empty() || used + entry + 8 > max_body_bytes) {
        fresh();
      }
      auto room = (max_body_bytes - used - entry) / 8;
      auto n = std::min(room, w.hashes.size() - i);
      prefix_blocks part{w.worker, {}};
      part.hashes.assign(w.hashes.begin() + static_cast<std::ptrdiff_t>(i),
                         w.hashes.begin() + static_cast<std::ptrdiff_t>(i + n));
      used += entry + 8 * n;
      out.back().workers.push_back(std::move(part));
      i += n;
    }
  }
  return out;
}

namespace detail {

void write_prefix_update(msgpack::packer<msgpack::sbuffer>& pk, const prefix_update& u) {
  // `role` and `snap` are written only when set: older readers never see them (and merge the
  // update into every policy, as they always did).
  pk.pack_map(2 + (u.role.empty() ? 0 : 1) + (u.snapshot ? 1 : 0));
  put(pk, "bb");
  pk.pack_uint64(u.block_bytes);
  if (!u.role.empty()) {
    put(pk, "role");
    put(pk, u.role);
  }
  if (u.snapshot) {
    put(pk, "snap");
    pk.pack_true();
  }
  put(pk, "w");
  pk.pack_array(static_cast<std::uint32_t>(u.workers.size()));
  std::string bin;
  for (auto& w : u.workers) {
    pk.pack_map(2);
    put(pk, "id");
    put(pk, w.worker);
    put(pk, "h");
    bin.resize(8 * w.hashes.size());
    for (std::size_t i = 0; i < w.hashes.size(); ++i) {
      for (int b = 0; b < 8; ++b) {
        bin[8 * i + b] = static_cast<char>((w.hashes[i] >> (8 * b)) & 0xff);
      }
    }
    pk.pack_bin(static_cast<std::uint32_t>(bin.size()));
    pk.pack_bin_body(bin.data(), static_cast<std::uint32_t>(bin.size()));
  }
}

bool read_prefix_update(const msgpack::object& body, prefix_update& out, std::string& why) {
  if (body.type != msgpack::type::MAP) {
    why = "prefix update is not a map";
    return false;
  }
  if (auto* bb = field(body, "bb")) {
    if (bb->type != msgpack::type::POSITIVE_INTEGER || bb->via.u64 > UINT32_MAX) {
      why = "prefix update: field 'bb' is not a 32-bit integer";
      return false;
    }
    out.block_bytes = static_cast<std::uint32_t>(bb->via.u64);
  }
  if (auto* role = field(body, "role")) {
    if (role->type != msgpack::type::STR) {
      why = "prefix update: field 'role' is not a string";
      return false;
    }
    out.role.assign(role->via.str.ptr, role->via.str.size);
  }
  if (auto* snap = field(body, "snap")) {
    if (snap->type != msgpack::type::BOOLEAN) {
      why = "prefix update: field 'snap' is not a boolean";
      return false;
    }
    out.snapshot = snap->via.boolean;
  }
  auto* ws = field(body, "w");
  if (!ws) {
    return true;
  }
  if (ws->type != msgpack::type::ARRAY) {
    why = "prefix update: field 'w' is not an array";
    return false;
  }
  out.workers.reserve(ws->via.array.size);
  for (std::uint32_t i = 0; i < ws->via.array.size; ++i) {
    auto& e = ws->via.array.ptr[i];
    if (e.type != msgpack::type::MAP) {
      why = "prefix update: an entry is not a map";
      return false;
    }
    auto* id = field(e, "id");
    auto* h = field(e, "h");
    if (!id || id->type != msgpack::type::STR || id->via.str.size == 0) {
      why = "prefix update: an entry names no worker";
      return false;
    }
    if (h && (h->type != msgpack::type::BIN || h->via.bin.size % 8 != 0)) {
      why = "prefix update: the hashes of worker " +
            std::string(id->via.str.ptr, id->via.str.size) +
            " are not a binary string of 8-byte hashes";
      return false;
    }
    prefix_blocks w;
    w.worker.assign(id->via.str.ptr, id->via.str.size);
    if (h) {
      auto* p = reinterpret_cast<const unsigned char*>(h->via.bin.ptr);
      w.hashes.resize(h->via.bin.size / 8);
      for (std::size_t k = 0; k < w.hashes.size(); ++k) {
        std::uint64_t v = 0;
        for (int b = 7; b >= 0; --b) {
          v = (v << 8) | p[8 * k + b];
        }
        w.hashes[k] = v;
      }
    }
    out.workers.push_back(std::move(w));
  }
  return true;
}

} // namespace detail

} // namespace troupe::protocol
