#include "protocol/cluster_wire.hpp"

#include <catch2/catch.hpp>
#include <msgpack.hpp>

using namespace troupe::protocol;

namespace {

worker_record sample_record() {
  worker_record r;
  r.id = "w-1a2b3c4d";
  r.spec.url = "http://10.0.0.7:8000";
  r.spec.type = worker_type::prefill;
  r.spec.bootstrap_port = 8998;
  r.spec.model_id = "llama";
  r.spec.api_key = "sk-secret";
  r.spec.runtime = engine_runtime::vllm;
  r.spec.connector = kv_connector::mooncake;
  r.spec.kv_engine_id = "engine-7";
  r.models = {"llama", "llama-lora"};
  r.version = 1700000000123;
  r.origin = "node-a:30000";
  r.stamp_ms = 1700000000123;
  r.registered_ms = 1700000000000;
  return r;
}

cluster_message envelope(decltype(cluster_message::body) body) {
  cluster_message m;
  m.from = "node-a:30000";
  m.incarnation = 42;
  m.sent_ms = 1700000000999;
  m.body = std::move(body);
  return m;
}

using packer = msgpack::packer<msgpack::sbuffer>;

void str(packer& pk, std::string_view s) {
  pk.pack_str(static_cast<std::uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

std::string bytes(const msgpack::sbuffer& b) {
  return std::string{b.data(), b.size()};
}

} // namespace

TEST_CASE("every cluster message survives encode and decode") {
  std::string why;
  SECTION("hello") {
    auto m = envelope(cluster_hello{"10.0.0.1:30000", "10.0.0.1:7000", {"10.0.0.2:7000"}});
    auto back = decode_message(encode(m), why);
    REQUIRE(back);
    CHECK(back->from == "node-a:30000");
    CHECK(back->incarnation == 42);
    CHECK(back->sent_ms == 1700000000999);
    CHECK(back->version == cluster_wire_version);
    auto& h = std::get<cluster_hello>(back->body);
    CHECK(h.api_address == "10.0.0.1:30000");
    CHECK(h.cluster_address == "10.0.0.1:7000");
    CHECK(h.peers == std::vector<std::string>{"10.0.0.2:7000"});
    CHECK_FALSE(h.again);
    auto asking = std::get<cluster_hello>(m.body);
    asking.again = true;
    m.body = asking;
    auto again = decode_message(encode(m), why);
    REQUIRE(again);
    CHECK(std::get<cluster_hello>(again->body).again);
  }
  SECTION("registry sync, records with and without optional fields, tombstones") {
    auto plain = sample_record();
    plain.id = "w-00000001";
    plain.spec = worker_spec{"http://h:1", worker_type::regular, {}, {}, {}, {}, {}, {}, {}};
    auto tomb = sample_record();
    tomb.id = "w-00000002";
    tomb.deleted = true;
    auto provider = sample_record();
    provider.id = "w-00000003";
    provider.spec = worker_spec{"https://api.openai.com",
                                worker_type::regular,
                                {},
                                {},
                                provider_kind::openai,
                                "sk-x",
                                {},
                                {},
                                {}};
    auto back = decode_message(
        encode(envelope(registry_sync{true, {sample_record(), plain, tomb, provider}})), why);
    REQUIRE(back);
    auto& s = std::get<registry_sync>(back->body);
    CHECK(s.full);
    REQUIRE(s.records.size() == 4);
    CHECK(s.records[0] == sample_record());
    CHECK(s.records[1] == plain);
    CHECK_FALSE(s.records[1].spec.bootstrap_port);
    CHECK_FALSE(s.records[1].spec.model_id);
    CHECK(s.records[2] == tomb);
    CHECK(s.records[3] == provider);
  }
  SECTION("load report") {
    load_report l{
        7,         {{"w-1", 3}, {"w-2", 1}}, 0xdeadbeefcafef00dull, 12, 2, 1700000000555, false,
        {"node-z"}};
    auto back = decode_message(encode(envelope(l)), why);
    REQUIRE(back);
    auto& r = std::get<load_report>(back->body);
    CHECK(r.seq == 7);
    CHECK(r.loads == l.loads);
    CHECK(r.registry_digest == l.registry_digest);
    CHECK(r.registry_version == 12);
    CHECK(r.workers == 2);
    CHECK(r.shared_version == 1700000000555);
    CHECK_FALSE(r.full);
    CHECK(r.resend == std::vector<std::string>{"node-z"});
  }
  SECTION("bye") {
    auto back = decode_message(encode(envelope(cluster_bye{})), why);
    REQUIRE(back);
    CHECK(std::holds_alternative<cluster_bye>(back->body));
  }
}

TEST_CASE("a message from a later version with fields this node does not know is read") {
  // What a version-2 node might send: new envelope and body fields, a new field in a record.
  msgpack::sbuffer buf;
  packer pk{&buf};
  pk.pack_map(8);
  str(pk, "v");
  pk.pack_uint64(2);
  str(pk, "compat");
  pk.pack_uint64(1); // additive change: version-1 readers still understand it
  str(pk, "from");
  str(pk, "node-b:30000");
  str(pk, "inc");
  pk.pack_uint64(9);
  str(pk, "zone");
  str(pk, "eu-west-1");
  str(pk, "sent");
  pk.pack_int64(5);
  str(pk, "kind");
  str(pk, "sync");
  str(pk, "body");
  pk.pack_map(3);
  str(pk, "full");
  pk.pack_false();
  str(pk, "priority");
  pk.pack_array(2);
  pk.pack_uint64(1);
  pk.pack_nil();
  str(pk, "records");
  pk.pack_array(1);
  pk.pack_map(5);
  str(pk, "id");
  str(pk, "w-2");
  str(pk, "url");
  str(pk, "http://h:2");
  str(pk, "ver");
  pk.pack_uint64(10);
  str(pk, "weight");
  pk.pack_double(0.5);
  str(pk, "origin");
  str(pk, "node-b:30000");

  std::string why;
  auto m = decode_message(bytes(buf), why);
  INFO(why);
  REQUIRE(m);
  CHECK(m->version == 2);
  CHECK(m->from == "node-b:30000");
  auto& s = std::get<registry_sync>(m->body);
  REQUIRE(s.records.size() == 1);
  CHECK(s.records[0].id == "w-2");
  CHECK(s.records[0].spec.url == "http://h:2");
  CHECK(s.records[0].version == 10);
  CHECK(s.records[0].origin == "node-b:30000");
}

TEST_CASE("a message from an older version without today's fields keeps the defaults") {
  // A version-0 style record: no models, stamps, tombstone flag or provider yet.
  msgpack::sbuffer buf;
  packer pk{&buf};
  pk.pack_map(4);
  str(pk, "v");
  pk.pack_uint64(0);
  str(pk, "from");
  str(pk, "old-node");
  str(pk, "kind");
  str(pk, "load");
  str(pk, "body");
  pk.pack_map(1);
  str(pk, "loads");
  pk.pack_map(1);
  str(pk, "w-1");
  pk.pack_uint64(4);

  std::string why;
  auto m = decode_message(bytes(buf), why);
  INFO(why);
  REQUIRE(m);
  CHECK(m->version == 0);
  CHECK(m->incarnation == 0);
  auto& l = std::get<load_report>(m->body);
  CHECK(l.seq == 0);
  CHECK(l.registry_digest == 0);
  REQUIRE(l.loads.size() == 1);
  CHECK(l.loads[0] == std::pair<std::string, std::int32_t>{"w-1", 4});
}

TEST_CASE("a record an older reader cannot understand is skipped, not the whole batch") {
  msgpack::sbuffer buf;
  packer pk{&buf};
  pk.pack_map(4);
  str(pk, "v");
  pk.pack_uint64(2);
  str(pk, "from");
  str(pk, "node-b");
  str(pk, "kind");
  str(pk, "sync");
  str(pk, "body");
  pk.pack_map(1);
  str(pk, "records");
  pk.pack_array(2);
  pk.pack_map(3);
  str(pk, "id");
  str(pk, "w-new");
  str(pk, "url");
  str(pk, "http://h:3");
  str(pk, "type");
  str(pk, "encoder"); // a worker type of a later version
  pk.pack_map(2);
  str(pk, "id");
  str(pk, "w-old");
  str(pk, "url");
  str(pk, "http://h:4");

  std::string why;
  auto m = decode_message(bytes(buf), why);
  REQUIRE(m);
  auto& s = std::get<registry_sync>(m->body);
  REQUIRE(s.records.size() == 1);
  CHECK(s.records[0].id == "w-old");
}

TEST_CASE("messages this node cannot read are refused with a reason") {
  std::string why;
  SECTION("a later, incompatible version") {
    auto m = envelope(cluster_bye{});
    m.version = cluster_wire_version + 1;
    m.compat = cluster_wire_version + 1;
    CHECK_FALSE(decode_message(encode(m), why));
    CHECK(why.find("readers of version") != std::string::npos);
  }
  SECTION("an unknown kind") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_map(2);
    str(pk, "from");
    str(pk, "x");
    str(pk, "kind");
    str(pk, "gossip2");
    CHECK_FALSE(decode_message(bytes(buf), why));
    CHECK(why.find("gossip2") != std::string::npos);
  }
  SECTION("a field of the wrong type") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_map(2);
    str(pk, "from");
    pk.pack_uint64(5);
    str(pk, "kind");
    str(pk, "bye");
    CHECK_FALSE(decode_message(bytes(buf), why));
    CHECK(why.find("'from'") != std::string::npos);
  }
  SECTION("no sender") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_map(1);
    str(pk, "kind");
    str(pk, "bye");
    CHECK_FALSE(decode_message(bytes(buf), why));
  }
  SECTION("not msgpack at all, or cut short") {
    CHECK_FALSE(decode_message("", why));
    auto full = encode(envelope(cluster_hello{"a", "b", {"c"}}));
    CHECK_FALSE(decode_message(std::string_view{full}.substr(0, full.size() / 2), why));
    CHECK_FALSE(decode_message("\xc1", why)); // a reserved msgpack byte
  }
  SECTION("not a map") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_array(0);
    CHECK_FALSE(decode_message(bytes(buf), why));
  }
}

TEST_CASE("a record whose key was left out says so; syncs carry their number") {
  std::string why;
  auto r = sample_record();
  r.spec.api_key.clear();
  r.key_withheld = true;
  auto back = decode_message(encode(envelope(registry_sync{true, {r, sample_record()}, 99})), why);
  REQUIRE(back);
  auto& s = std::get<registry_sync>(back->body);
  CHECK(s.sync_id == 99);
  REQUIRE(s.records.size() == 2);
  CHECK(s.records[0].key_withheld);
  CHECK(s.records[0].spec.api_key.empty());
  CHECK_FALSE(s.records[1].key_withheld);
  // Written only when set: a record with its key, or a delta, reads as older versions wrote it.
  auto plain = encode(envelope(registry_sync{false, {sample_record()}}));
  CHECK(plain.find("nokey") == std::string::npos);
  CHECK(plain.find("sid") == std::string::npos);
}

TEST_CASE("what a message claims is bounded by its size") {
  std::string why;
  SECTION("an array claiming four billion records, in a few bytes") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_map(3);
    str(pk, "from");
    str(pk, "x");
    str(pk, "kind");
    str(pk, "sync");
    str(pk, "body");
    pk.pack_map(1);
    str(pk, "records");
    pk.pack_array(0xffffffffu); // and nothing after it
    CHECK(buf.size() < 64);
    CHECK_FALSE(decode_message(bytes(buf), why));
    // Refused before reserving: the first pass, which allocates nothing, finds it cut short.
    CHECK(why == "not msgpack: truncated or malformed");
  }
  SECTION("nesting deeper than any real message") {
    msgpack::sbuffer buf;
    packer pk{&buf};
    pk.pack_map(3);
    str(pk, "from");
    str(pk, "x");
    str(pk, "kind");
    str(pk, "bye");
    str(pk, "body");
    for (int i = 0; i < 40; ++i) {
      pk.pack_array(1);
    }
    pk.pack_nil();
    CHECK_FALSE(decode_message(bytes(buf), why));
    CHECK(why.find("depth size overflow") != std::string::npos);
  }
}

TEST_CASE("records are split into messages within a size, in order") {
  std::vector<worker_record> rs;
  for (int i = 0; i < 100; ++i) {
    auto r = sample_record();
    r.id = "w-" + std::to_string(i);
    rs.push_back(r);
  }
  auto big = sample_record();
  big.id = "w-big";
  big.models.assign(200, std::string(100, 'm'));
  rs.insert(rs.begin() + 50, big);
  std::vector<std::string> too_large;
  auto groups = split_records(rs, 4096, too_large);
  CHECK(too_large == std::vector<std::string>{"w-big"});
  CHECK(groups.size() > 1);
  std::vector<std::string> ids;
  for (auto& g : groups) {
    auto m = envelope(registry_sync{true, g, 1});
    m.from = std::string(64, 'n'); // a long node name
    CHECK(encode(m).size() <= 4096);
    for (auto& r : g) {
      ids.push_back(r.id);
    }
  }
  REQUIRE(ids.size() == 100);
  CHECK(ids.front() == "w-0");
  CHECK(ids.back() == "w-99");
  SECTION("nothing to send is one empty group (a whole, empty registry)") {
    CHECK(split_records({}, 4096, too_large).size() == 1);
  }
}

TEST_CASE("the state file keeps records and tombstones") {
  registry_file f;
  f.node = "node-a:30000";
  f.saved_ms = 123;
  auto tomb = sample_record();
  tomb.id = "w-2";
  tomb.deleted = true;
  f.records = {sample_record(), tomb};
  std::string why;
  auto back = decode_registry_file(encode(f), why);
  REQUIRE(back);
  CHECK(back->node == f.node);
  CHECK(back->saved_ms == 123);
  CHECK(back->records == f.records);
  CHECK_FALSE(decode_registry_file("garbage", why));
}

TEST_CASE("last writer wins by version, then by node name") {
  auto a = sample_record();
  auto b = a;
  b.version = a.version + 1;
  CHECK(supersedes(b, a));
  CHECK_FALSE(supersedes(a, b));
  b.version = a.version;
  b.origin = "node-b:30000";
  CHECK(supersedes(b, a)); // same version: the greater node name wins, everywhere alike
  CHECK_FALSE(supersedes(a, a));
}

TEST_CASE("new versions follow the wall clock, and never fall behind what was seen") {
  CHECK(next_version(0, 1000) == 1000);
  CHECK(next_version(999, 1000) == 1000);
  CHECK(next_version(1000, 1000) == 1001);
  CHECK(next_version(5000, 1000) == 5001); // this node's clock is behind a peer's
  CHECK(next_version(7, -1) == 8);
}

TEST_CASE("the registry digest does not depend on record order and sees every version") {
  auto a = sample_record();
  auto b = sample_record();
  b.id = "w-other";
  CHECK((record_hash(a) ^ record_hash(b)) == (record_hash(b) ^ record_hash(a)));
  auto a2 = a;
  a2.version += 1;
  CHECK(record_hash(a2) != record_hash(a));
  auto a3 = a;
  a3.deleted = true;
  CHECK(record_hash(a3) != record_hash(a));
  auto a4 = a;
  a4.origin = "node-z";
  CHECK(record_hash(a4) != record_hash(a));
}

TEST_CASE("a container announcing more elements than the bytes hold is refused unallocated") {
  // Found by tests/fuzz/cluster_wire_fuzz: msgpack-c allocates a container's elements when it
  // reads the header, so five bytes (an array of 2^32-1) asked for 96 GB, and nested headers of a
  // million elements each asked for 24 MB per five bytes. Now a first pass refuses them.
  std::string nested;
  for (int i = 0; i < 1000; ++i) {
    nested += std::string("\xdd\x00\x10\x00\x00", 5); // an array of 2^20 elements, ...
  }
  // The fuzzer's state file: a valid envelope whose `inc` field is an array of 0xdda47365.
  const std::string found("\x87\xa1\x76\x21\xa6\x63\x6f\x6d\x70\x61\x74\x01\xa4\x46\x72\x6f"
                          "\x72\xac\x6e\x6f\x64\x65\x2d\x61\x3a\x33\x30\x30\x30\x30\xa3\x69"
                          "\x6e\x63\xdd\xa4\x73\x65\xcf\x6e\x00\x74\x00\x01\x8b\x64\xa3\x62"
                          "\xe7\xa4\x6b\x69\x6e\x64\xa3\x62\x79\x65\xa4\x62\x6f\x64\x79\x80",
                          64);
  for (const auto& bytes : {std::string("\xdd\xff\xff\xff\xff", 5),
                            std::string("\xdf\xff\xff\xff\xff", 5), nested, found}) {
    std::string why;
    CHECK_FALSE(decode_message(bytes, why));
    CHECK(why == "not msgpack: truncated or malformed");
    why.clear();
    CHECK_FALSE(decode_registry_file(bytes, why));
    CHECK(why == "not msgpack: truncated or malformed");
  }
}

TEST_CASE("nesting deeper than any message has is refused") {
  std::string deep(100, '\x91'); // an array holding an array holding ...
  deep += '\xc0';
  std::string why;
  CHECK_FALSE(decode_message(deep, why));
  CHECK(why.find("not msgpack") == 0);
  auto m = envelope(cluster_bye{});
  CHECK(decode_message(encode(m), why)); // real messages nest a few levels
}

TEST_CASE("the digest covers the whole record but its secret") {
  auto a = sample_record();
  auto changed = [&](auto edit) {
    auto b = a;
    edit(b);
    return record_hash(b) != record_hash(a);
  };
  CHECK(changed([](worker_record& r) { r.models.push_back("another-model"); }));
  CHECK(changed([](worker_record& r) { r.spec.url += "/v2"; }));
  CHECK(changed([](worker_record& r) { r.spec.type = worker_type::decode; }));
  CHECK(changed([](worker_record& r) { r.spec.bootstrap_port = 9001; }));
  CHECK(changed([](worker_record& r) { r.registered_ms += 1; }));
  CHECK(changed([](worker_record& r) { r.stamp_ms += 1; }));
  // A key only TLS links carry: nodes holding it and nodes not given it agree.
  CHECK_FALSE(changed([](worker_record& r) { r.spec.api_key = "sk-other"; }));
  CHECK_FALSE(changed([](worker_record& r) {
    r.spec.api_key.clear();
    r.key_withheld = true;
  }));
}

TEST_CASE("one version with two contents: every node keeps the same one") {
  auto a = sample_record();
  auto b = a;
  b.models = {"something-else"};
  CHECK(supersedes(a, b) != supersedes(b, a));
  auto c = a;
  c.spec.api_key = "sk-only-here"; // the key is no difference
  CHECK_FALSE(supersedes(a, c));
  CHECK_FALSE(supersedes(c, a));
}
