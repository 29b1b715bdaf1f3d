#pragma once

#include <array>
#include <ctime>
#include <memory>
#include <spdlog/formatter.h>

namespace troupe::logs {

/// Formats each log record as a plain line, the bytes of `logs::plain_pattern` under spdlog's
/// pattern formatter (`<local time> <level> [<logger>] [request_id=<id> ]<message>\n`), written
/// directly: the pattern formatter's dozen flag objects cost ~2k instructions per line, and
/// the gateway writes a line per request. The date and time up to the second are made once
/// per second.
class plain_log_formatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

private:
  std::time_t cached_second_ = -1;
  std::array<char, 20> cached_prefix_{}; ///< `YYYY-MM-DDTHH:MM:SS.` of `cached_second_`.
};

} // namespace troupe::logs
