#pragma once

#include "protocol/cluster_wire.hpp"

#include <string>
#include <vector>

namespace troupe::cluster {

/// Reads the registry records saved at `path`. No file: no records. A file that cannot be read
/// is renamed `<path>.corrupt` (so that the next save does not destroy it) and `why` says so.
std::vector<protocol::worker_record> load_state(const std::string& path, std::string& why);

/// Saves `records` to `path` atomically (a temporary file, fsync'd, renamed over it, then the
/// directory fsync'd: on the disk when this returns true), readable by the
/// owner only: records carry workers' api keys. Returns false and sets `why` on failure.
bool save_state(const std::string& path, const std::string& node,
                const std::vector<protocol::worker_record>& records, std::string& why);

} // namespace troupe::cluster
