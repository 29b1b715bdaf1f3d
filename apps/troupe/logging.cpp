#include "apps/troupe/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace troupe::apps {

void setup_logging(const std::string& level, bool json) {
  auto logger = spdlog::stdout_logger_mt("troupe");
  if (json) {
    // Message text is escaped by the callers' formatting; keep fields flat and greppable.
    logger->set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%f%z","level":"%l","thread":%t,"message":"%v"})");
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

} // namespace troupe::apps
