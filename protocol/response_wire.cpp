#include "protocol/response_wire.hpp"

#include "protocol/msgpack_fields.hpp"

namespace troupe::protocol {

namespace {

using msgpack_fields::put;

/// Bytes one pair takes: two strings with their (at most 5-byte) headers.
std::size_t pair_size(const std::pair<std::string, std::string>& p) noexcept {
  return 10 + p.first.size() + p.second.size();
}

/// The map of one update and its key, with their headers.
constexpr std::size_t update_overhead = 16;

} // namespace

std::size_t encoded_size(const response_update& u) noexcept {
  std::size_t n = update_overhead;
  for (auto& p : u.responses) {
    n += pair_size(p);
  }
  return n;
}

std::vector<response_update>
split_responses(std::vector<std::pair<std::string, std::string>> responses,
                std::size_t max_body_bytes, std::size_t& too_large) {
  std::vector<response_update> out;
  std::size_t used = 0;
  for (auto& p : responses) {
    auto n = pair_size(p);
    if (update_overhead + n > max_body_bytes) {
      ++too_large;
      continue;
    }
    if (out.empty() || used + n > max_body_bytes) {
      out.emplace_back();
      used = update_overhead;
    }
    used += n;
    out.back().responses.push_back(std::move(p));
  }
  return out;
}

namespace detail {

void write_response_update(msgpack::packer<msgpack::sbuffer>& pk, const response_update& u) {
  pk.pack_map(u.snapshot ? 2 : 1); // `snap` only when set: older readers never see it
  if (u.snapshot) {
    put(pk, "snap");
    pk.pack_true();
  }
  put(pk, "r");
  pk.pack_map(static_cast<std::uint32_t>(u.responses.size()));
  for (auto& [id, worker] : u.responses) {
    put(pk, id);
    put(pk, worker);
  }
}

bool read_response_update(const msgpack::object& body, response_update& out, std::string& why) {
  if (body.type != msgpack::type::MAP) {
    why = "response update is not a map";
    return false;
  }
  const msgpack::object* r = nullptr;
  for (std::uint32_t i = 0; i < body.via.map.size; ++i) {
    auto& k = body.via.map.ptr[i].key;
    if (k.type != msgpack::type::STR) {
      continue;
    }
    auto key = std::string_view{k.via.str.ptr, k.via.str.size};
    auto& v = body.via.map.ptr[i].val;
    if (key == "r") {
      r = &v;
    } else if (key == "snap") {
      if (v.type != msgpack::type::BOOLEAN) {
        why = "response update: field 'snap' is not a boolean";
        return false;
      }
      out.snapshot = v.via.boolean;
    }
  }
  if (!r) {
    return true;
  }
  if (r->type != msgpack::type::MAP) {
    why = "response update: field 'r' is not a map";
    return false;
  }
  out.responses.reserve(r->via.map.size);
  for (std::uint32_t i = 0; i < r->via.map.size; ++i) {
    auto& kv = r->via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR || kv.val.type != msgpack::type::STR ||
        kv.key.via.str.size == 0 || kv.val.via.str.size == 0) {
      why = "response update: field 'r' holds an entry that is not (response id, worker id)";
      return false;
    }
    out.responses.emplace_back(std::string{kv.key.via.str.ptr, kv.key.via.str.size},
                               std::string{kv.val.via.str.ptr, kv.val.via.str.size});
  }
  return true;
}

} // namespace detail

} // namespace troupe::protocol
