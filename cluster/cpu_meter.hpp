#pragma once

#include <cstdint>
#include <ctime>

namespace troupe::cluster {

/// Adds the CPU time the calling thread spends in this scope to `total_ns`: what the node
/// actor's handlers cost, shown as `cpu_seconds` in `/admin/actors` (CAF 0.17 as Debian builds
/// it has no actor profiler, and the actor shares its scheduler threads with every other one).
/// One `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` at each end.
class cpu_meter {
public:
  explicit cpu_meter(std::uint64_t& total_ns) : total_(total_ns), start_(now()) {}
  ~cpu_meter() { total_ += now() - start_; }
  cpu_meter(const cpu_meter&) = delete;
  cpu_meter& operator=(const cpu_meter&) = delete;

private:
  static std::uint64_t now() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
  }

  std::uint64_t& total_;
  std::uint64_t start_;
};

} // namespace troupe::cluster
