// Fuzzes bootstrap injection as a PD request goes through it: the body a client sent (any JSON
// object), the batch size read from it, the injection of one room per sequence, and the
// serialization for the wire. The properties: the three bootstrap fields have the batch's shape,
// rooms are distinct, every other field is untouched and in its place, and the wire bytes are
// JSON that parses back to the injected body.

#include "protocol/bootstrap.hpp"
#include "protocol/logprobs.hpp"
#include "protocol/routes.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

using namespace troupe::protocol;
using json = nlohmann::ordered_json;

namespace {

constexpr operation pd_operations[] = {
    operation::generate, operation::chat_completions, operation::completions,
    operation::messages, operation::responses_create, operation::rerank,
};

/// Prefill hosts as worker URLs give them, and two no URL parser lets through (invalid UTF-8, JSON
/// metacharacters) to show they cannot break the body.
constexpr const char* hosts[] = {"10.0.0.7", "gpu-1.example.com", "::1", "h\xff\xfe", "a\"b\\c"};

constexpr const char* bootstrap_keys[] = {"bootstrap_host", "bootstrap_port", "bootstrap_room"};

json without_bootstrap(json j) {
  for (auto* k : bootstrap_keys) {
    j.erase(k);
  }
  return j;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The input: an operation byte, a target byte (host, whether a port is set), the body.
  if (size < 2) {
    return 0;
  }
  auto op = pd_operations[data[0] % std::size(pd_operations)];
  bootstrap_target target;
  target.host = hosts[(data[1] & 0x7) % std::size(hosts)];
  if (data[1] & 0x8) {
    target.port = static_cast<std::uint16_t>(8998 + (data[1] >> 4));
  }
  std::string text{reinterpret_cast<const char*>(data) + 2, size - 2};

  // As pd_request.cpp: a body that is not a JSON object is refused before this.
  auto body = json::parse(text, nullptr, false);
  if (!body.is_object()) {
    return 0;
  }
  auto batch = bootstrap_batch_size(op, body);
  (void)wants_input_logprobs(op, body);
  if (batch) {
    FUZZ_CHECK(*batch >= 2 || op != operation::chat_completions);
    FUZZ_CHECK(*batch >= 1);
    if (*batch > max_bootstrap_batch) {
      return 0; // refused with a 400 (pd_request.cpp)
    }
  }
  auto before = without_bootstrap(body);
  room_source rooms{size};
  auto used = inject_bootstrap(body, batch, target, rooms);
  FUZZ_CHECK(used.size() == (batch ? *batch : 1));
  for (auto room : used) {
    FUZZ_CHECK(room < (std::uint64_t{1} << 63));
  }
  auto sorted = used;
  std::sort(sorted.begin(), sorted.end());
  FUZZ_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());

  auto wire = dump_body(body);
  auto back = json::parse(wire, nullptr, false);
  FUZZ_CHECK(back.is_object());
  FUZZ_CHECK(without_bootstrap(back) == before);
  auto& host = back["bootstrap_host"];
  auto& port = back["bootstrap_port"];
  auto& room = back["bootstrap_room"];
  if (!batch) {
    FUZZ_CHECK(host.is_string());
    FUZZ_CHECK(target.port ? port == *target.port : port.is_null());
    FUZZ_CHECK(room == used.front());
  } else {
    FUZZ_CHECK(host.is_array() && host.size() == *batch);
    FUZZ_CHECK(port.is_array() && port.size() == *batch);
    FUZZ_CHECK(room.is_array() && room.size() == *batch);
    for (std::size_t i = 0; i < *batch; ++i) {
      FUZZ_CHECK(room[i] == used[i]);
    }
  }
  // The host travels as UTF-8: as given when it is, with invalid bytes replaced otherwise.
  auto sent_host = batch ? host[0].get<std::string>() : host.get<std::string>();
  FUZZ_CHECK(troupe::fuzz::valid_utf8(sent_host));
  if (troupe::fuzz::valid_utf8(target.host)) {
    FUZZ_CHECK(sent_host == target.host);
  }
  return 0;
}
