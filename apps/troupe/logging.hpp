#pragma once

#include <string>

namespace troupe::apps {

/// Configures spdlog's default logger: `level` (trace..off), plain or JSON lines.
void setup_logging(const std::string& level, bool json);

} // namespace troupe::apps
