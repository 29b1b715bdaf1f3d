// Fuzzes the cluster's msgpack decoder: what a peer node sends (decode_message) and what a node
// reads back from its state file (decode_registry_file). The properties: no crash and no
// unbounded allocation on any input; a refusal says why; what is accepted encodes to bytes that
// decode again, to the same thing (the encoding is canonical, so re-encoding is the identity).

#include "protocol/cluster_wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <string>
#include <string_view>

using namespace troupe::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes{reinterpret_cast<const char*>(data), size};

  std::string why;
  if (auto m = decode_message(bytes, why)) {
    FUZZ_CHECK(!m->from.empty());
    FUZZ_CHECK(m->compat <= cluster_wire_version);
    auto once = encode(*m);
    std::string why_again;
    auto back = decode_message(once, why_again);
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(encode(*back) == once);
  } else {
    FUZZ_CHECK(!why.empty());
  }

  why.clear();
  if (auto f = decode_registry_file(bytes, why)) {
    for (auto& r : f->records) {
      FUZZ_CHECK(!r.id.empty());
    }
    auto once = encode(*f);
    std::string why_again;
    auto back = decode_registry_file(once, why_again);
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(back->records == f->records);
    FUZZ_CHECK(encode(*back) == once);
  } else {
    FUZZ_CHECK(!why.empty());
  }
  return 0;
}
