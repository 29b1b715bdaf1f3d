#pragma once

// Prometheus' standard process series (`process_cpu_seconds_total`, `process_open_fds`,
// `process_max_fds`, `process_resident_memory_bytes`, ...), the ones every official client
// library exports and dashboards expect, read from /proc when scraped. A node near its open-files
// limit answers 503 `out_of_resources` (docs/operations.md): `process_open_fds` over
// `process_max_fds` shows it coming.

#include <cstddef>
#include <optional>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <string_view>
#include <vector>

namespace troupe::services {

/// What a process's /proc/<pid>/stat line says, in the units of the process series.
struct process_stat {
  double cpu_seconds = 0;        ///< User and system time.
  double start_time_seconds = 0; ///< When the process started, seconds since the epoch.
  double virtual_bytes = 0;      ///< Virtual memory size.
  double resident_bytes = 0;     ///< Resident set size.
  double threads = 0;            ///< Threads of the process.
};

/// Parses a /proc/<pid>/stat line: the fields after the command name, which is read up to the
/// last `)` (a name may hold spaces and parentheses). `ticks_per_second` and `page_size` are the
/// machine's (`sysconf`), `boot_time_seconds` the `btime` of /proc/stat. Empty when the line is
/// cut short or a field is not a number.
std::optional<process_stat> parse_proc_stat(std::string_view line, long ticks_per_second,
                                            long page_size, double boot_time_seconds);

/// The `btime` line of /proc/stat: when the machine booted, seconds since the epoch.
std::optional<double> parse_boot_time(std::string_view proc_stat);

/// The descriptors this process has open: the entries of /proc/self/fd, less the one that
/// reading the directory takes. Empty where there is no /proc (or no descriptor left to read it).
std::optional<std::size_t> count_open_fds();

namespace detail {

/// The `process_*` series of this process, read from /proc and `getrlimit` when scraped; a
/// series whose source cannot be read is left out of that scrape.
class process_gauges final : public prometheus::Collectable {
public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

} // namespace detail

} // namespace troupe::services
