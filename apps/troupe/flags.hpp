#pragma once

#include "actors/gateway_config.hpp"

#include <optional>

namespace troupe::apps {

/// Parses the command line into a gateway configuration (smg-compatible flags, see
/// docs/configuration.md). Returns nothing after printing help or an error; `exit_code` then
/// says how the process should end.
std::optional<actors::gateway_config> parse_flags(int argc, char** argv, int& exit_code);

} // namespace troupe::apps
