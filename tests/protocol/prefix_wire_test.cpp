#include "protocol/cluster_wire.hpp"
#include "protocol/prefix_wire.hpp"
#include "tests/protocol/wire_message.hpp"

#include <catch2/catch.hpp>
#include <msgpack.hpp>

using namespace troupe::protocol;
using troupe::protocol::testing::with;

TEST_CASE("prefix updates round-trip: worker ids and 8-byte hashes, nothing else") {
  prefix_update u;
  u.block_bytes = 128;
  u.workers.push_back({"w-1", {0x0123456789abcdefull, 0, UINT64_MAX}});
  u.workers.push_back({"w-2", {}});
  auto bytes = encode(with(u));
  std::string why;
  auto back = decode_message(bytes, why);
  REQUIRE(back);
  auto* got = std::get_if<prefix_update>(&back->body);
  REQUIRE(got);
  CHECK(got->block_bytes == 128);
  REQUIRE(got->workers.size() == 2);
  CHECK(got->workers[0].worker == "w-1");
  CHECK(got->workers[0].hashes == u.workers[0].hashes);
  CHECK(got->workers[1].hashes.empty());
  // 3 hashes take 24 bytes and a small envelope: no room for anything like a prompt.
  CHECK(bytes.size() < 140);
  CHECK(encoded_size(u) >= 24);
}

TEST_CASE("a hello says the sender's prefix block size only when it keeps a view") {
  cluster_message m;
  m.from = "node-a";
  cluster_hello h{"api", "addr", {}};
  m.body = h;
  auto plain = encode(m);
  CHECK(plain.find("pfx") == std::string::npos); // what older readers never see
  h.prefix_block_bytes = 64;
  m.body = h;
  std::string why;
  auto back = decode_message(encode(m), why);
  REQUIRE(back);
  CHECK(std::get<cluster_hello>(back->body).prefix_block_bytes == 64);
  auto old = decode_message(plain, why);
  REQUIRE(old);
  CHECK(std::get<cluster_hello>(old->body).prefix_block_bytes == 0);
}

TEST_CASE("a prefix update whose hashes are not whole 8-byte words is refused") {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{&buf};
  auto str = [&](std::string_view s) {
    pk.pack_str(static_cast<std::uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
  };
  pk.pack_map(4);
  str("v");
  pk.pack_uint64(1);
  str("from");
  str("node-b");
  str("kind");
  str("prefix");
  str("body");
  pk.pack_map(2);
  str("bb");
  pk.pack_uint64(128);
  str("w");
  pk.pack_array(1);
  pk.pack_map(2);
  str("id");
  str("w-1");
  str("h");
  pk.pack_bin(7);
  pk.pack_bin_body("1234567", 7);
  std::string why;
  CHECK_FALSE(decode_message(std::string_view{buf.data(), buf.size()}, why));
  CHECK(why.find("8-byte") != std::string::npos);
}

TEST_CASE("a prefix update names its policy's role and whether it is a snapshot, only when set") {
  prefix_update u{128, {{"w-1", {1, 2}}}, {}, false};
  auto plain = encode(with(u));
  CHECK(plain.find("role") == std::string::npos); // what older readers never see
  CHECK(plain.find("snap") == std::string::npos);
  u.role = "prefill";
  u.snapshot = true;
  std::string why;
  auto back = decode_message(encode(with(u)), why);
  REQUIRE(back);
  auto& got = std::get<prefix_update>(back->body);
  CHECK(got.role == "prefill");
  CHECK(got.snapshot);
  CHECK(got.workers[0].hashes == std::vector<std::uint64_t>{1, 2});
  auto old = decode_message(plain, why);
  REQUIRE(old);
  CHECK(std::get<prefix_update>(old->body).role.empty()); // an older sender: every policy's
  CHECK_FALSE(std::get<prefix_update>(old->body).snapshot);
}

TEST_CASE("a long prefix update is split into messages within the cap, in order") {
  prefix_update u{128, {}, "regular", true};
  std::vector<std::uint64_t> all;
  for (int w = 0; w < 3; ++w) {
    prefix_blocks b{"w-" + std::to_string(w), {}};
    for (std::uint64_t i = 0; i < 100; ++i) {
      b.hashes.push_back(1000 * w + i);
      all.push_back(1000 * w + i);
    }
    u.workers.push_back(std::move(b));
  }
  u.workers.push_back({std::string(600, 'x'), {7, 8}}); // an id longer than a message
  std::uint64_t too_large = 0;
  auto parts = split_prefixes(u, 512, too_large);
  CHECK(too_large == 2);
  REQUIRE(parts.size() > 3);
  std::vector<std::uint64_t> back;
  for (auto& p : parts) {
    CHECK(p.role == "regular");
    CHECK(p.snapshot);
    CHECK(p.block_bytes == 128);
    CHECK(encoded_size(p) <= 512);
    for (auto& w : p.workers) {
      CHECK(w.worker.size() < 10);
      back.insert(back.end(), w.hashes.begin(), w.hashes.end());
    }
  }
  CHECK(back == all);
}
