#pragma once

#include <memory>
#include <spdlog/formatter.h>

namespace troupe::logs {

/// Formats each log record as one JSON object on one line (`--log-json`):
/// `{"time","level","logger","thread","request_id"?,"message"}`. The message is escaped as a
/// JSON string (quotes, backslashes, control characters; invalid UTF-8 becomes U+FFFD).
/// `request_id` is there when the line is about a request (`logs::request_log`), so lines
/// about one request can be selected by field (`jq 'select(.request_id == "...")'`).
class json_log_formatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

} // namespace troupe::logs
