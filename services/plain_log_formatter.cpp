#include "services/plain_log_formatter.hpp"

#include "services/logs.hpp"

#include <chrono>
#include <spdlog/details/os.h>
#include <string_view>

namespace troupe::logs {

namespace {

/// Writes `v` (0..99 or 0..999) as `digits` decimal digits, zero-padded, at `p`.
void put_digits(char* p, int v, int digits) {
  for (int i = digits - 1; i >= 0; --i, v /= 10) {
    p[i] = static_cast<char>('0' + v % 10);
  }
}

} // namespace

void plain_log_formatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using namespace std::chrono;
  auto since_epoch = msg.time.time_since_epoch();
  auto secs = duration_cast<seconds>(since_epoch);
  auto second = static_cast<std::time_t>(secs.count());
  if (second != cached_second_) {
    auto tm = spdlog::details::os::localtime(second);
    auto* p = cached_prefix_.data();
    put_digits(p, tm.tm_year + 1900, 4);
    p[4] = '-';
    put_digits(p + 5, tm.tm_mon + 1, 2);
    p[7] = '-';
    put_digits(p + 8, tm.tm_mday, 2);
    p[10] = 'T';
    put_digits(p + 11, tm.tm_hour, 2);
    p[13] = ':';
    put_digits(p + 14, tm.tm_min, 2);
    p[16] = ':';
    put_digits(p + 17, tm.tm_sec, 2);
    p[19] = '.';
    cached_second_ = second;
  }
  put(dest, {cached_prefix_.data(), cached_prefix_.size()});
  char ms[4] = {0, 0, 0, ' '};
  put_digits(ms, static_cast<int>(duration_cast<milliseconds>(since_epoch).count() % 1000), 3);
  put(dest, {ms, sizeof(ms)});
  auto level = spdlog::level::to_string_view(msg.level);
  put(dest, {level.data(), level.size()});
  put(dest, " [");
  put(dest, {msg.logger_name.data(), msg.logger_name.size()});
  put(dest, "] ");
  if (auto id = current_request_id(); !id.empty()) {
    append_request_id_field(id, dest);
  }
  put(dest, {msg.payload.data(), msg.payload.size()});
  put(dest, spdlog::details::os::default_eol);
}

std::unique_ptr<spdlog::formatter> plain_log_formatter::clone() const {
  return std::make_unique<plain_log_formatter>();
}

} // namespace troupe::logs
