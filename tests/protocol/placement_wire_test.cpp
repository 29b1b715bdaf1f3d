#include "protocol/placement_wire.hpp"
#include "tests/protocol/wire_message.hpp"

#include <catch2/catch.hpp>

using namespace troupe::protocol;
using troupe::protocol::testing::with;

TEST_CASE("placement asks and answers round-trip: hashes and worker ids") {
  placement_ask a;
  a.id = 42;
  a.role = "regular";
  a.block_bytes = 128;
  a.head = 0xfeedface12345678ull;
  a.prompt_bytes = 9000;
  a.chain = {1, 0xffffffffffffffffull, 0x0102030405060708ull};
  a.candidates = {"w-1", "w-2"};
  a.owner = "node-b"; // not on the wire
  auto bytes = encode(with(a));
  std::string why;
  auto back = decode_message(bytes, why);
  REQUIRE(back);
  auto* got = std::get_if<placement_ask>(&back->body);
  REQUIRE(got);
  CHECK(got->id == 42);
  CHECK(got->role == "regular");
  CHECK(got->block_bytes == 128);
  CHECK(got->head == a.head);
  CHECK(got->prompt_bytes == 9000);
  CHECK(got->chain == a.chain);
  CHECK(got->candidates == a.candidates);
  CHECK(got->owner.empty());
  CHECK(encode(*back) == bytes);

  auto answer = decode_message(encode(with(placement_answer{42, "w-2"})), why);
  REQUIRE(answer);
  CHECK(std::get<placement_answer>(answer->body).id == 42);
  CHECK(std::get<placement_answer>(answer->body).worker == "w-2");
}

TEST_CASE("a hello says whether its sender answers placement asks; older hellos do not") {
  cluster_hello h;
  h.placement = true;
  std::string why;
  auto back = decode_message(encode(with(h)), why);
  REQUIRE(back);
  CHECK(std::get<cluster_hello>(back->body).placement);
  auto bytes = encode(with(cluster_hello{}));
  CHECK(bytes.find("plc") == std::string::npos); // written only when set
  back = decode_message(bytes, why);
  REQUIRE(back);
  CHECK_FALSE(std::get<cluster_hello>(back->body).placement);
}

TEST_CASE("a placement ask with a chain beyond the limit is refused, with the reason") {
  placement_ask a;
  a.chain.assign(placement_max_chain + 1, 7);
  std::string why;
  CHECK_FALSE(decode_message(encode(with(a)), why));
  CHECK(why.find("field 'h'") != std::string::npos);
}
