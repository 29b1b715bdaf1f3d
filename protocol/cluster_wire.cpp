#include "protocol/cluster_wire.hpp"

#include "protocol/msgpack_fields.hpp"
#include "protocol/placement_wire.hpp"
#include "protocol/prefix_wire.hpp"
#include "protocol/response_wire.hpp"

#include <msgpack.hpp>
#include <tuple>

namespace troupe::protocol {

namespace {

// Field names are short (they travel with every message) and never reused for another meaning.

using packer = msgpack::packer<msgpack::sbuffer>;
using msgpack_fields::put;

void put(packer& pk, const std::vector<std::string>& xs) {
  pk.pack_array(static_cast<std::uint32_t>(xs.size()));
  for (auto& x : xs) {
    put(pk, x);
  }
}

void put_record(packer& pk, const worker_record& r) {
  pk.pack_map(r.key_withheld ? 17 : 16);
  put(pk, "id");
  put(pk, r.id);
  put(pk, "url");
  put(pk, r.spec.url);
  put(pk, "type");
  put(pk, to_string(r.spec.type));
  put(pk, "bport");
  pk.pack_uint64(r.spec.bootstrap_port.value_or(0));
  put(pk, "model");
  put(pk, r.spec.model_id.value_or(""));
  put(pk, "prov");
  put(pk, to_string(r.spec.provider));
  put(pk, "key");
  put(pk, r.spec.api_key);
  // Added after the first wire version: a node that does not know them ignores them.
  put(pk, "rt");
  put(pk, r.spec.runtime ? to_string(*r.spec.runtime) : "");
  put(pk, "kvc");
  put(pk, r.spec.connector == kv_connector::unset ? "" : to_string(r.spec.connector));
  put(pk, "kve");
  put(pk, r.spec.kv_engine_id);
  put(pk, "models");
  put(pk, r.models);
  put(pk, "ver");
  pk.pack_uint64(r.version);
  put(pk, "origin");
  put(pk, r.origin);
  put(pk, "del");
  r.deleted ? pk.pack_true() : pk.pack_false();
  put(pk, "stamp");
  pk.pack_int64(r.stamp_ms);
  put(pk, "reg");
  pk.pack_int64(r.registered_ms);
  if (r.key_withheld) {
    // Written only when set: what older readers never see, they cannot misread.
    put(pk, "nokey");
    pk.pack_true();
  }
}

void put_records(packer& pk, const std::vector<worker_record>& rs) {
  pk.pack_array(static_cast<std::uint32_t>(rs.size()));
  for (auto& r : rs) {
    put_record(pk, r);
  }
}

struct body_writer {
  packer& pk;

  std::string_view operator()(const cluster_hello& h) {
    pk.pack_map(3 + (h.acks ? 1 : 0) + (h.deltas ? 1 : 0) + (h.again ? 1 : 0) +
                (h.prefix_block_bytes != 0 ? 1 : 0) + (h.responses ? 1 : 0) +
                (h.placement ? 1 : 0));
    put(pk, "api");
    put(pk, h.api_address);
    put(pk, "addr");
    put(pk, h.cluster_address);
    put(pk, "peers");
    put(pk, h.peers);
    if (h.acks) {
      put(pk, "acks");
      pk.pack_true();
    }
    if (h.deltas) {
      put(pk, "deltas");
      pk.pack_true();
    }
    if (h.prefix_block_bytes != 0) {
      put(pk, "pfx");
      pk.pack_uint64(h.prefix_block_bytes);
    }
    if (h.again) {
      put(pk, "again");
      pk.pack_true();
    }
    if (h.responses) {
      put(pk, "resp");
      pk.pack_true();
    }
    if (h.placement) {
      put(pk, "plc");
      pk.pack_true();
    }
    return "hello";
  }

  std::string_view operator()(const cluster_ack& a) {
    pk.pack_map(1);
    put(pk, "records");
    pk.pack_map(static_cast<std::uint32_t>(a.records.size()));
    for (auto& [id, version] : a.records) {
      put(pk, id);
      pk.pack_uint64(version);
    }
    return "ack";
  }

  std::string_view operator()(const registry_sync& s) {
    pk.pack_map(s.sync_id != 0 ? 3 : 2);
    put(pk, "full");
    s.full ? pk.pack_true() : pk.pack_false();
    put(pk, "records");
    put_records(pk, s.records);
    if (s.sync_id != 0) {
      put(pk, "sid");
      pk.pack_uint64(s.sync_id);
    }
    return "sync";
  }

  std::string_view operator()(const load_report& l) {
    pk.pack_map(7 + (l.resend.empty() ? 0 : 1));
    put(pk, "full");
    l.full ? pk.pack_true() : pk.pack_false();
    if (!l.resend.empty()) {
      put(pk, "resend");
      put(pk, l.resend);
    }
    put(pk, "seq");
    pk.pack_uint64(l.seq);
    put(pk, "loads");
    pk.pack_map(static_cast<std::uint32_t>(l.loads.size()));
    for (auto& [id, n] : l.loads) {
      put(pk, id);
      pk.pack_int64(n);
    }
    put(pk, "digest");
    pk.pack_uint64(l.registry_digest);
    put(pk, "rver");
    pk.pack_uint64(l.registry_version);
    put(pk, "workers");
    pk.pack_uint64(l.workers);
    put(pk, "sver");
    pk.pack_uint64(l.shared_version);
    return "load";
  }

  std::string_view operator()(const cluster_bye&) {
    pk.pack_map(0);
    return "bye";
  }

  std::string_view operator()(const prefix_update& u) {
    detail::write_prefix_update(pk, u);
    return "prefix";
  }

  std::string_view operator()(const response_update& u) {
    detail::write_response_update(pk, u);
    return "responses";
  }

  std::string_view operator()(const placement_ask& a) {
    detail::write_placement_ask(pk, a);
    return "place";
  }

  std::string_view operator()(const placement_answer& a) {
    detail::write_placement_answer(pk, a);
    return "placed";
  }
};

std::string_view kind_of(const cluster_message& m) {
  struct namer {
    std::string_view operator()(const cluster_hello&) { return "hello"; }
    std::string_view operator()(const registry_sync&) { return "sync"; }
    std::string_view operator()(const load_report&) { return "load"; }
    std::string_view operator()(const cluster_bye&) { return "bye"; }
    std::string_view operator()(const cluster_ack&) { return "ack"; }
    std::string_view operator()(const prefix_update&) { return "prefix"; }
    std::string_view operator()(const response_update&) { return "responses"; }
    std::string_view operator()(const placement_ask&) { return "place"; }
    std::string_view operator()(const placement_answer&) { return "placed"; }
  };
  return std::visit(namer{}, m.body);
}

// -- reading --

/// A msgpack map read field by field. A missing field leaves the target as it is; a field of
/// the wrong type is an error (remembered in `why`, the first one wins).
class map_reader {
public:
  map_reader(const msgpack::object& o, std::string context, std::string& why)
      : context_(std::move(context)), why_(why) {
    if (o.type != msgpack::type::MAP) {
      fail("is not a map");
      return;
    }
    map_ = &o.via.map;
  }

  bool ok() const { return ok_; }

  const msgpack::object* find(std::string_view key) const {
    if (!map_) {
      return nullptr;
    }
    for (std::uint32_t i = 0; i < map_->size; ++i) {
      auto& k = map_->ptr[i].key;
      if (k.type == msgpack::type::STR && std::string_view{k.via.str.ptr, k.via.str.size} == key) {
        return &map_->ptr[i].val;
      }
    }
    return nullptr;
  }

  void get(std::string_view key, std::string& out) {
    if (auto* o = find(key)) {
      if (o->type == msgpack::type::STR) {
        out.assign(o->via.str.ptr, o->via.str.size);
      } else if (o->type == msgpack::type::BIN) {
        out.assign(o->via.bin.ptr, o->via.bin.size);
      } else {
        wrong(key, "a string");
      }
    }
  }

  void get(std::string_view key, std::uint64_t& out) {
    if (auto* o = find(key)) {
      if (o->type == msgpack::type::POSITIVE_INTEGER) {
        out = o->via.u64;
      } else {
        wrong(key, "a non-negative integer");
      }
    }
  }

  void get(std::string_view key, std::uint32_t& out) {
    std::uint64_t v = out;
    get(key, v);
    if (v > UINT32_MAX) {
      return wrong(key, "a 32-bit integer");
    }
    out = static_cast<std::uint32_t>(v);
  }

  void get(std::string_view key, std::int64_t& out) {
    if (auto* o = find(key)) {
      if (o->type == msgpack::type::POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
        out = static_cast<std::int64_t>(o->via.u64);
      } else if (o->type == msgpack::type::NEGATIVE_INTEGER) {
        out = o->via.i64;
      } else {
        wrong(key, "an integer");
      }
    }
  }

  void get(std::string_view key, bool& out) {
    if (auto* o = find(key)) {
      if (o->type == msgpack::type::BOOLEAN) {
        out = o->via.boolean;
      } else {
        wrong(key, "a boolean");
      }
    }
  }

  void get(std::string_view key, std::vector<std::string>& out) {
    if (auto* o = find(key)) {
      if (o->type != msgpack::type::ARRAY) {
        return wrong(key, "an array of strings");
      }
      out.clear();
      for (std::uint32_t i = 0; i < o->via.array.size; ++i) {
        auto& x = o->via.array.ptr[i];
        if (x.type != msgpack::type::STR) {
          return wrong(key, "an array of strings");
        }
        out.emplace_back(x.via.str.ptr, x.via.str.size);
      }
    }
  }

  void fail(std::string what) {
    if (ok_) {
      why_ = context_ + " " + what;
    }
    ok_ = false;
  }

private:
  void wrong(std::string_view key, std::string_view expected) {
    fail("field '" + std::string(key) + "' is not " + std::string(expected));
  }

  const msgpack::object_map* map_ = nullptr;
  std::string context_;
  std::string& why_;
  bool ok_ = true;
};

std::optional<worker_record> read_record(const msgpack::object& o, std::string& why) {
  map_reader in{o, "worker record", why};
  worker_record r;
  std::string type = "regular";
  std::string provider = "none";
  std::uint64_t bport = 0;
  std::string model;
  in.get("id", r.id);
  in.get("url", r.spec.url);
  in.get("type", type);
  in.get("bport", bport);
  in.get("model", model);
  in.get("prov", provider);
  in.get("key", r.spec.api_key);
  std::string runtime;
  std::string connector;
  in.get("rt", runtime);
  in.get("kvc", connector);
  in.get("kve", r.spec.kv_engine_id);
  in.get("models", r.models);
  in.get("ver", r.version);
  in.get("origin", r.origin);
  in.get("del", r.deleted);
  in.get("stamp", r.stamp_ms);
  in.get("reg", r.registered_ms);
  in.get("nokey", r.key_withheld);
  if (!in.ok()) {
    return std::nullopt;
  }
  if (r.id.empty()) {
    in.fail("has no id");
    return std::nullopt;
  }
  auto t = parse_worker_type(type);
  auto p = parse_provider(provider);
  if (!t || !p || bport > 65535) {
    in.fail(r.id + " has a worker type, provider or bootstrap port this node does not know");
    return std::nullopt;
  }
  r.spec.type = *t;
  r.spec.provider = *p;
  // A runtime or connector this node does not know (a later version's): as if unset.
  if (!runtime.empty()) {
    r.spec.runtime = parse_runtime(runtime);
  }
  if (!connector.empty()) {
    r.spec.connector = parse_kv_connector(connector).value_or(kv_connector::unset);
  }
  if (bport != 0) {
    r.spec.bootstrap_port = static_cast<std::uint16_t>(bport);
  }
  if (!model.empty()) {
    r.spec.model_id = std::move(model);
  }
  return r;
}

/// Reads an array of records. A record this node cannot read (a worker type added by a later
/// version, say) is skipped rather than failing the whole batch.
bool read_records(const msgpack::object* o, std::vector<worker_record>& out, std::string& why) {
  if (!o) {
    return true;
  }
  if (o->type != msgpack::type::ARRAY) {
    why = "records is not an array";
    return false;
  }
  for (std::uint32_t i = 0; i < o->via.array.size; ++i) {
    std::string skip_why;
    if (auto r = read_record(o->via.array.ptr[i], skip_why)) {
      out.push_back(std::move(*r));
    }
  }
  return true;
}

bool read_body(std::string_view kind, const msgpack::object* o, cluster_message& m,
               std::string& why) {
  static const msgpack::object empty_map = [] {
    msgpack::object x;
    x.type = msgpack::type::MAP;
    x.via.map.size = 0;
    x.via.map.ptr = nullptr;
    return x;
  }();
  const msgpack::object& body = o ? *o : empty_map;
  if (kind == "hello") {
    cluster_hello h;
    map_reader in{body, "hello", why};
    in.get("api", h.api_address);
    in.get("addr", h.cluster_address);
    in.get("peers", h.peers);
    in.get("acks", h.acks);
    in.get("deltas", h.deltas);
    in.get("pfx", h.prefix_block_bytes);
    in.get("again", h.again);
    in.get("resp", h.responses);
    in.get("plc", h.placement);
    m.body = std::move(h);
    return in.ok();
  }
  if (kind == "sync") {
    registry_sync s;
    map_reader in{body, "sync", why};
    in.get("full", s.full);
    in.get("sid", s.sync_id);
    if (!in.ok() || !read_records(in.find("records"), s.records, why)) {
      return false;
    }
    m.body = std::move(s);
    return true;
  }
  if (kind == "load") {
    load_report l;
    map_reader in{body, "load report", why};
    in.get("seq", l.seq);
    in.get("digest", l.registry_digest);
    in.get("rver", l.registry_version);
    in.get("workers", l.workers);
    in.get("sver", l.shared_version);
    in.get("full", l.full);
    in.get("resend", l.resend);
    if (auto* loads = in.find("loads")) {
      if (loads->type != msgpack::type::MAP) {
        in.fail("field 'loads' is not a map");
      } else {
        for (std::uint32_t i = 0; i < loads->via.map.size; ++i) {
          auto& kv = loads->via.map.ptr[i];
          if (kv.key.type != msgpack::type::STR || kv.val.type != msgpack::type::POSITIVE_INTEGER ||
              kv.val.via.u64 > INT32_MAX) {
            in.fail("field 'loads' holds an entry that is not (worker id, count)");
            break;
          }
          l.loads.emplace_back(std::string{kv.key.via.str.ptr, kv.key.via.str.size},
                               static_cast<std::int32_t>(kv.val.via.u64));
        }
      }
    }
    m.body = std::move(l);
    return in.ok();
  }
  if (kind == "bye") {
    m.body = cluster_bye{};
    return true;
  }
  if (kind == "ack") {
    cluster_ack a;
    map_reader in{body, "ack", why};
    if (auto* rs = in.find("records")) {
      if (rs->type != msgpack::type::MAP) {
        in.fail("field 'records' is not a map");
      } else {
        for (std::uint32_t i = 0; i < rs->via.map.size; ++i) {
          auto& kv = rs->via.map.ptr[i];
          if (kv.key.type != msgpack::type::STR || kv.val.type != msgpack::type::POSITIVE_INTEGER) {
            in.fail("field 'records' holds an entry that is not (worker id, version)");
            break;
          }
          a.records.emplace_back(std::string{kv.key.via.str.ptr, kv.key.via.str.size},
                                 kv.val.via.u64);
        }
      }
    }
    m.body = std::move(a);
    return in.ok();
  }
  if (kind == "prefix") {
    prefix_update u;
    if (!detail::read_prefix_update(body, u, why)) {
      return false;
    }
    m.body = std::move(u);
    return true;
  }
  if (kind == "responses") {
    response_update u;
    if (!detail::read_response_update(body, u, why)) {
      return false;
    }
    m.body = std::move(u);
    return true;
  }
  if (kind == "place") {
    placement_ask a;
    if (!detail::read_placement_ask(body, a, why)) {
      return false;
    }
    m.body = std::move(a);
    return true;
  }
  if (kind == "placed") {
    placement_answer a;
    if (!detail::read_placement_answer(body, a, why)) {
      return false;
    }
    m.body = std::move(a);
    return true;
  }
  why = "unknown message kind '" + std::string(kind) + "'";
  return false;
}

/// Deeper nesting than any message or state file has (they nest five levels) is refused.
constexpr std::size_t max_nesting = 32;

/// Unpacks `bytes` into `oh` (msgpack-c reports malformed input by throwing: kept in here).
/// Every element takes at least one byte, so no array, map or string can be longer than the
/// input: a claimed length above that is refused before msgpack-c reserves room for it.
bool unpack(std::string_view bytes, msgpack::object_handle& oh, std::string& why) {
  // msgpack-c allocates a container's elements as soon as it reads the container's header:
  // even bounded by the input's size, nested headers each claiming that many elements would
  // make it ask for ~24 bytes times the input size per header. A first pass that allocates
  // nothing checks that every element announced is there, so the unpack after it allocates at
  // most a few dozen bytes per byte of input.
  std::size_t off = 0;
  msgpack::null_visitor check;
  if (!msgpack::parse(bytes.data(), bytes.size(), off, check)) {
    why = "not msgpack: truncated or malformed";
    return false;
  }
  auto n = bytes.size();
  msgpack::unpack_limit limit{n, n, n, n, n, max_nesting};
  try {
    oh = msgpack::unpack(bytes.data(), bytes.size(), nullptr, nullptr, limit);
    return true;
  } catch (const std::exception& e) {
    why = std::string("not msgpack: ") + e.what();
    return false;
  }
}

/// The envelope's version check: the writer says which readers can understand it.
bool compatible(std::uint32_t version, std::uint32_t compat, std::string& why) {
  if (compat > cluster_wire_version) {
    why = "written by wire version " + std::to_string(version) + " for readers of version " +
          std::to_string(compat) + " or later; this node reads version " +
          std::to_string(cluster_wire_version);
    return false;
  }
  return true;
}

} // namespace

bool supersedes(const worker_record& a, const worker_record& b) noexcept {
  if (std::tie(a.version, a.origin) != std::tie(b.version, b.origin)) {
    return std::tie(a.version, a.origin) > std::tie(b.version, b.origin);
  }
  // Two contents under one (version, origin): a node that wrote again after losing its state,
  // say. Every node keeps the same one, so registries (and digests) still converge.
  return record_hash(a) > record_hash(b);
}

std::uint64_t next_version(std::uint64_t highest_seen, std::int64_t now_ms) noexcept {
  auto wall = now_ms > 0 ? static_cast<std::uint64_t>(now_ms) : 0;
  return std::max(highest_seen + 1, wall);
}

std::uint64_t record_hash(const worker_record& r) noexcept {
  // FNV-1a over the record as the wire writes it, secrets aside: the api key travels only
  // over TLS links (a node may hold a key its peer was not sent), so it and the flag saying
  // it was withheld stay out; everything else that was replicated is in.
  auto copy = r;
  copy.spec.api_key.clear();
  copy.key_withheld = false;
  msgpack::sbuffer buf;
  packer pk{&buf};
  put_record(pk, copy);
  std::uint64_t h = 14695981039346656037ull;
  auto* b = reinterpret_cast<const unsigned char*>(buf.data());
  for (std::size_t i = 0; i < buf.size(); ++i) {
    h ^= b[i];
    h *= 1099511628211ull;
  }
  return h;
}

std::string encode(const cluster_message& m) {
  msgpack::sbuffer buf;
  packer pk{&buf};
  pk.pack_map(7);
  put(pk, "v");
  pk.pack_uint64(m.version);
  put(pk, "compat");
  pk.pack_uint64(m.compat);
  put(pk, "from");
  put(pk, m.from);
  put(pk, "inc");
  pk.pack_uint64(m.incarnation);
  put(pk, "sent");
  pk.pack_int64(m.sent_ms);
  put(pk, "kind");
  put(pk, kind_of(m));
  put(pk, "body");
  std::visit(body_writer{pk}, m.body);
  return std::string{buf.data(), buf.size()};
}

std::optional<cluster_message> decode_message(std::string_view bytes, std::string& why) {
  msgpack::object_handle oh;
  if (!unpack(bytes, oh, why)) {
    return std::nullopt;
  }
  cluster_message m;
  map_reader in{oh.get(), "cluster message", why};
  m.version = 0;
  m.compat = 0;
  std::string kind;
  in.get("v", m.version);
  in.get("compat", m.compat);
  in.get("from", m.from);
  in.get("inc", m.incarnation);
  in.get("sent", m.sent_ms);
  in.get("kind", kind);
  if (!in.ok() || !compatible(m.version, m.compat, why)) {
    return std::nullopt;
  }
  if (m.from.empty()) {
    why = "cluster message names no sender";
    return std::nullopt;
  }
  if (!read_body(kind, in.find("body"), m, why)) {
    return std::nullopt;
  }
  return m;
}

std::vector<std::vector<worker_record>> split_records(std::vector<worker_record> records,
                                                      std::size_t max_bytes,
                                                      std::vector<std::string>& too_large) {
  // An envelope with the longest fields a real one has (node names are short; the margin
  // covers them and the counters), measured once.
  constexpr std::size_t envelope_margin = 512;
  std::vector<std::vector<worker_record>> out;
  std::vector<worker_record> group;
  std::size_t group_bytes = envelope_margin;
  for (auto& r : records) {
    msgpack::sbuffer one;
    packer pk{&one};
    put_record(pk, r);
    auto size = one.size() + 8; // the array header grows by at most this
    if (size + envelope_margin > max_bytes) {
      too_large.push_back(r.id);
      continue;
    }
    if (group_bytes + size > max_bytes && !group.empty()) {
      out.push_back(std::move(group));
      group.clear();
      group_bytes = envelope_margin;
    }
    group_bytes += size;
    group.push_back(std::move(r));
  }
  if (!group.empty() || out.empty()) {
    out.push_back(std::move(group));
  }
  return out;
}

std::string encode(const registry_file& f) {
  msgpack::sbuffer buf;
  packer pk{&buf};
  pk.pack_map(5);
  put(pk, "v");
  pk.pack_uint64(f.version);
  put(pk, "compat");
  pk.pack_uint64(cluster_wire_compat);
  put(pk, "node");
  put(pk, f.node);
  put(pk, "saved");
  pk.pack_int64(f.saved_ms);
  put(pk, "records");
  put_records(pk, f.records);
  return std::string{buf.data(), buf.size()};
}

std::optional<registry_file> decode_registry_file(std::string_view bytes, std::string& why) {
  msgpack::object_handle oh;
  if (!unpack(bytes, oh, why)) {
    return std::nullopt;
  }
  registry_file f;
  std::uint32_t compat = 0;
  f.version = 0;
  map_reader in{oh.get(), "state file", why};
  in.get("v", f.version);
  in.get("compat", compat);
  in.get("node", f.node);
  in.get("saved", f.saved_ms);
  if (!in.ok() || !compatible(f.version, compat, why) ||
      !read_records(in.find("records"), f.records, why)) {
    return std::nullopt;
  }
  return f;
}

} // namespace troupe::protocol
