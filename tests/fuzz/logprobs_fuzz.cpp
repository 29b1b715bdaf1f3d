// Fuzzes the PD input-logprobs merge as pd_reply_gate runs it: a prefill worker's response
// (JSON or an SSE stream) is read for its input logprobs, which are then prepended to a decode
// worker's JSON body, or to each event of its stream. Both responses come from workers, so
// neither is trusted. The properties: no crash; what is produced is JSON (or an SSE event
// carrying JSON); a merge of a decode object puts the prefill's logprobs first, then the
// decode's own.

#include "protocol/logprobs.hpp"
#include "protocol/sse.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <nlohmann/json.hpp>
#include <string>

using namespace troupe::protocol;
using json = nlohmann::ordered_json;

namespace {

const json* input_logprobs_of(const json& obj) {
  if (!obj.is_object()) {
    return nullptr;
  }
  auto meta = obj.find("meta_info");
  if (meta == obj.end() || !meta->is_object()) {
    return nullptr;
  }
  auto lp = meta->find("input_token_logprobs");
  return lp == meta->end() ? nullptr : &*lp;
}

/// `merged` is `decode` with `prefill` prepended to its input logprobs.
void check_merged_object(const json& decode, const json& merged, const json& prefill) {
  auto* before = input_logprobs_of(decode);
  auto* after = input_logprobs_of(merged);
  FUZZ_CHECK(after && after->is_array());
  FUZZ_CHECK(after->size() == prefill.size() + (before && before->is_array() ? before->size() : 0));
  for (std::size_t i = 0; i < prefill.size(); ++i) {
    FUZZ_CHECK((*after)[i] == prefill[i]);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The input: a flags byte (bit 0: the prefill response is an SSE stream), the prefill
  // response, a NUL, the decode response.
  if (size == 0) {
    return 0;
  }
  bool prefill_streamed = data[0] & 1;
  std::string_view rest{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto nul = rest.find('\0');
  std::string prefill{rest.substr(0, nul)};
  std::string decode{nul == std::string_view::npos ? std::string_view{} : rest.substr(nul + 1)};

  auto lp = read_input_logprobs(prefill, prefill_streamed);
  FUZZ_CHECK(lp.items.size() <= 65536);
  for (std::size_t i = 0; i < lp.items.size(); ++i) {
    if (auto* p = lp.find(i)) {
      FUZZ_CHECK(p->is_array());
    }
  }

  // A decode JSON body.
  if (auto merged = merge_input_logprobs(decode, lp)) {
    FUZZ_CHECK(!lp.empty());
    auto out = json::parse(*merged, nullptr, false);
    FUZZ_CHECK(!out.is_discarded());
    auto in_json = json::parse(decode, nullptr, false);
    FUZZ_CHECK(in_json.is_object() || in_json.is_array());
    if (in_json.is_object()) {
      check_merged_object(in_json, out, *lp.find(0));
    } else {
      FUZZ_CHECK(out.is_array() && out.size() == in_json.size());
    }
  }

  // A decode stream, framed and merged event by event as the gate does.
  sse_framer framer;
  framer.feed(decode, [&](std::string_view raw) {
    auto merged = merge_input_logprobs_event(raw, lp);
    if (!merged) {
      return;
    }
    FUZZ_CHECK(merged->size() >= 2 && merged->substr(merged->size() - 2) == "\n\n");
    sse_framer again;
    int events = 0;
    again.feed(*merged, [&](std::string_view ev) {
      ++events;
      auto parsed = parse_sse_event(ev);
      auto out = json::parse(parsed.data, nullptr, false);
      FUZZ_CHECK(out.is_object());
      auto before = json::parse(parse_sse_event(raw).data, nullptr, false);
      auto idx = before.contains("index") && before["index"].is_number_unsigned()
                     ? before["index"].get<std::size_t>()
                     : 0;
      check_merged_object(before, out, *lp.find(idx));
    });
    FUZZ_CHECK(events == 1 && again.pending().empty());
  });
  return 0;
}
