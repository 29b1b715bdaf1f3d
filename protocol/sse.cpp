#include "protocol/sse.hpp"

#include <algorithm>
#include <cctype>

namespace troupe::protocol {

std::size_t sse_framer::find_event_end(std::size_t start) const {
  // Only bytes appended since the last feed can complete an event; step back three bytes so a
  // terminator split across feeds is still seen.
  std::size_t from = std::max(start, scan_from_ >= 3 ? scan_from_ - 3 : std::size_t{0});
  for (std::size_t i = from; i + 1 < buf_.size(); ++i) {
    if (buf_[i] != '\n') {
      continue;
    }
    if (buf_[i + 1] == '\n') {
      return i + 2;
    }
    if (buf_[i + 1] == '\r' && i + 2 < buf_.size() && buf_[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::string::npos;
}

namespace {

std::string_view trim_line_end(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
    line.remove_suffix(1);
  }
  return line;
}

// The value of `field:` in `line`, or npos-marked empty optional via `found`.
bool field_value(std::string_view line, std::string_view field, std::string_view& value) {
  if (line.size() < field.size() + 1 || line.substr(0, field.size()) != field ||
      line[field.size()] != ':') {
    return false;
  }
  value = line.substr(field.size() + 1);
  if (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  return true;
}

} // namespace

sse_event parse_sse_event(std::string_view raw) {
  sse_event ev;
  bool first_data = true;
  while (!raw.empty()) {
    auto nl = raw.find('\n');
    auto line = trim_line_end(raw.substr(0, nl));
    raw = nl == std::string_view::npos ? std::string_view{} : raw.substr(nl + 1);
    std::string_view value;
    if (field_value(line, "data", value)) {
      if (!first_data) {
        ev.data.push_back('\n');
      }
      ev.data.append(value);
      first_data = false;
    } else if (field_value(line, "event", value)) {
      ev.event.assign(value);
    }
  }
  return ev;
}

std::string format_sse_event(std::string_view data, std::string_view event) {
  std::string out;
  out.reserve(data.size() + event.size() + 16);
  if (!event.empty()) {
    out.append("event: ").append(event).push_back('\n');
  }
  out.append("data: ").append(data).append("\n\n");
  return out;
}

bool is_done_event(std::string_view raw) {
  return parse_sse_event(raw).data == "[DONE]";
}

bool is_event_stream(std::string_view content_type) {
  constexpr std::string_view want = "text/event-stream";
  auto semi = content_type.find(';');
  auto mime = content_type.substr(0, semi);
  while (!mime.empty() && mime.front() == ' ') {
    mime.remove_prefix(1);
  }
  while (!mime.empty() && mime.back() == ' ') {
    mime.remove_suffix(1);
  }
  return mime.size() == want.size() &&
         std::equal(mime.begin(), mime.end(), want.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

} // namespace troupe::protocol
