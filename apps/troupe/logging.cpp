#include "apps/troupe/logging.hpp"

#include "apps/troupe/json_log_formatter.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace troupe::apps {

void setup_logging(const std::string& level, bool json) {
  auto logger = spdlog::stdout_logger_mt("troupe");
  if (json) {
    // A formatter, not a pattern: a pattern cannot escape the message.
    logger->set_formatter(std::make_unique<json_log_formatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

} // namespace troupe::apps
