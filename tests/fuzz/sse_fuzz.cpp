// Fuzzes SSE framing and event parsing as the relay uses them: a worker's stream arrives in
// pieces cut anywhere, the framer must yield the same events however it is cut (and lose or
// invent no byte), and every event must parse. The first byte of the input chooses the cuts.

#include "protocol/sse.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <string>
#include <string_view>
#include <vector>

using namespace troupe::protocol;

namespace {

/// The reference framing: the earliest `\n\n` or `\n\r\n` ends an event.
std::vector<std::string> frame_whole(std::string_view s, std::string& rest) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    std::size_t end = 0;
    if (s[i] == '\n' && s[i + 1] == '\n') {
      end = i + 2;
    } else if (s[i] == '\n' && s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n') {
      end = i + 3;
    }
    if (end) {
      out.emplace_back(s.substr(start, end - start));
      start = end;
      i = end - 1;
    }
  }
  rest = std::string(s.substr(start));
  return out;
}

void check_event(std::string_view raw) {
  auto ev = parse_sse_event(raw);
  // Fields come from the event's own bytes.
  FUZZ_CHECK(ev.data.size() <= raw.size());
  FUZZ_CHECK(ev.event.size() <= raw.size());
  FUZZ_CHECK(ev.event.find('\n') == std::string::npos);
  if (is_done_event(raw)) {
    FUZZ_CHECK(ev.data == "[DONE]");
  }
  // Re-framing what was parsed gives an event that parses to the same data, for data and
  // names without line breaks of their own (format_sse_event writes one data line).
  if (ev.data.find_first_of("\r\n") == std::string::npos &&
      ev.event.find('\r') == std::string::npos) {
    auto again = format_sse_event(ev.data, ev.event);
    auto back = parse_sse_event(again);
    FUZZ_CHECK(back.data == ev.data);
    FUZZ_CHECK(back.event == ev.event);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The input: one byte that seeds the cuts (0: the stream in one piece), then the stream.
  if (size == 0) {
    return 0;
  }
  std::uint32_t cut_seed = data[0];
  std::string_view stream{reinterpret_cast<const char*>(data) + 1, size - 1};

  std::string rest;
  auto want = frame_whole(stream, rest);

  sse_framer framer;
  std::vector<std::string> got;
  std::size_t pos = 0;
  std::uint32_t lcg = cut_seed;
  while (pos < stream.size()) {
    std::size_t len = stream.size();
    if (cut_seed != 0) {
      lcg = lcg * 1103515245u + 12345u;
      len = 1 + (lcg >> 16) % 64;
    }
    auto piece = stream.substr(pos, len);
    pos += piece.size();
    framer.feed(piece, [&](std::string_view ev) { got.emplace_back(ev); });
  }
  FUZZ_CHECK(got == want);
  FUZZ_CHECK(framer.pending() == rest);
  for (auto& ev : got) {
    check_event(ev);
  }
  check_event(rest);

  // A Content-Type value; no property beyond answering.
  (void)is_event_stream(stream);
  return 0;
}
