#include "services/json_log_formatter.hpp"

#include "services/logs.hpp"

#include <chrono>
#include <ctime>
#include <string_view>

namespace troupe::logs {

namespace {

void append(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

/// Length of the valid UTF-8 sequence starting `s`, or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s) {
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  auto c = b(0);
  if (c >= 0xC2 && c <= 0xDF) {
    return cont(1) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) {
      return 0;
    }
    // No overlong forms, no surrogates.
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F)) {
      return 0;
    }
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) {
      return 0;
    }
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F)) {
      return 0;
    }
    return 4;
  }
  return 0;
}

/// Appends `s` as a JSON string literal.
void append_json_string(spdlog::memory_buf_t& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (auto n = utf8_sequence(s.substr(i)); n > 0) {
        append(out, s.substr(i, n));
        i += n;
      } else {
        append(out, "\\ufffd");
        ++i;
      }
      continue;
    }
    switch (c) {
    case '"':
      append(out, "\\\"");
      break;
    case '\\':
      append(out, "\\\\");
      break;
    case '\n':
      append(out, "\\n");
      break;
    case '\r':
      append(out, "\\r");
      break;
    case '\t':
      append(out, "\\t");
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
        out.append(esc, esc + sizeof(esc));
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    ++i;
  }
  out.push_back('"');
}

/// `2024-05-01T12:00:00.123456Z`.
void append_time(spdlog::memory_buf_t& out, spdlog::log_clock::time_point t) {
  auto since = t.time_since_epoch();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since - secs).count();
  std::time_t tt = secs.count();
  std::tm tm{};
  gmtime_r(&tt, &tm);
  fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z\"",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 micros);
}

} // namespace

void json_log_formatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  std::string_view payload{msg.payload.data(), msg.payload.size()};
  append(dest, "{\"time\":");
  append_time(dest, msg.time);
  append(dest, ",\"level\":");
  auto level = spdlog::level::to_string_view(msg.level);
  append_json_string(dest, {level.data(), level.size()});
  append(dest, ",\"logger\":");
  append_json_string(dest, {msg.logger_name.data(), msg.logger_name.size()});
  fmt::format_to(std::back_inserter(dest), ",\"thread\":{}", msg.thread_id);
  if (auto id = logs::current_request_id(); !id.empty()) {
    append(dest, ",\"request_id\":");
    append_json_string(dest, id);
  }
  append(dest, ",\"message\":");
  append_json_string(dest, payload);
  append(dest, "}\n");
}

std::unique_ptr<spdlog::formatter> json_log_formatter::clone() const {
  return std::make_unique<json_log_formatter>();
}

} // namespace troupe::logs
