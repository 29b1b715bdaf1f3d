#include "services/process_gauges.hpp"

#include "protocol/parse_number.hpp"
#include "transport/small_file.hpp"

#include <array>
#include <dirent.h>
#include <prometheus/client_metric.h>
#include <sys/resource.h>
#include <unistd.h>

namespace troupe::services {

namespace {

using protocol::next_field;
using transport::read_small_file;

/// The machine's boot time, read once: it does not change while the process runs.
std::optional<double> boot_time() {
  static const std::optional<double> at = parse_boot_time(read_small_file("/proc/stat"));
  return at;
}

namespace prom = prometheus;

void add(std::vector<prom::MetricFamily>& out, const char* name, const char* help,
         prom::MetricType type, double value) {
  prom::ClientMetric m;
  (type == prom::MetricType::Counter ? m.counter.value : m.gauge.value) = value;
  out.push_back({name, help, type, {std::move(m)}});
}

} // namespace

std::optional<process_stat> parse_proc_stat(std::string_view line, long ticks_per_second,
                                            long page_size, double boot_time_seconds) {
  // "pid (comm) state ppid ...": the fields are numbered from 1 (pid); the name is field 2.
  auto name_end = line.rfind(')');
  if (name_end == std::string_view::npos || ticks_per_second <= 0) {
    return std::nullopt;
  }
  auto rest = line.substr(name_end + 1);
  std::array<std::string_view, 22> fields{}; // fields 3 (state) to 24 (rss)
  for (auto& f : fields) {
    f = next_field(rest);
    if (f.empty()) {
      return std::nullopt;
    }
  }
  auto field = [&](int number) { return fields[static_cast<std::size_t>(number - 3)]; };
  auto utime = protocol::parse_number<unsigned long long>(field(14));
  auto stime = protocol::parse_number<unsigned long long>(field(15));
  auto threads = protocol::parse_number<long long>(field(20));
  auto start = protocol::parse_number<unsigned long long>(field(22));
  auto vsize = protocol::parse_number<unsigned long long>(field(23));
  auto rss = protocol::parse_number<long long>(field(24));
  if (!utime || !stime || !threads || !start || !vsize || !rss) {
    return std::nullopt;
  }
  auto ticks = static_cast<double>(ticks_per_second);
  process_stat s;
  s.cpu_seconds = static_cast<double>(*utime + *stime) / ticks;
  s.start_time_seconds = boot_time_seconds + static_cast<double>(*start) / ticks;
  s.virtual_bytes = static_cast<double>(*vsize);
  s.resident_bytes = static_cast<double>(*rss) * static_cast<double>(page_size);
  s.threads = static_cast<double>(*threads);
  return s;
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  constexpr std::string_view key = "btime ";
  for (std::size_t at = 0; at < proc_stat.size();) {
    auto end = proc_stat.find('\n', at);
    auto line = proc_stat.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.substr(0, key.size()) == key) {
      auto value = protocol::parse_number<unsigned long long>(line.substr(key.size()));
      return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::size_t> count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    return std::nullopt;
  }
  std::size_t count = 0;
  while (auto* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') {
      ++count;
    }
  }
  ::closedir(dir);
  return count > 0 ? count - 1 : 0; // the directory's own descriptor
}

namespace detail {

std::vector<prom::MetricFamily> process_gauges::Collect() const {
  std::vector<prom::MetricFamily> out;
  auto boot = boot_time();
  if (auto s = parse_proc_stat(read_small_file("/proc/self/stat"), ::sysconf(_SC_CLK_TCK),
                               ::sysconf(_SC_PAGESIZE), boot.value_or(0))) {
    add(out, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
        prom::MetricType::Counter, s->cpu_seconds);
    add(out, "process_virtual_memory_bytes", "Virtual memory size in bytes",
        prom::MetricType::Gauge, s->virtual_bytes);
    add(out, "process_resident_memory_bytes", "Resident memory size in bytes",
        prom::MetricType::Gauge, s->resident_bytes);
    add(out, "process_threads", "Threads of the process", prom::MetricType::Gauge, s->threads);
    if (boot) {
      add(out, "process_start_time_seconds",
          "Start time of the process since unix epoch in seconds", prom::MetricType::Gauge,
          s->start_time_seconds);
    }
  }
  if (auto fds = count_open_fds()) {
    add(out, "process_open_fds", "Number of open file descriptors", prom::MetricType::Gauge,
        static_cast<double>(*fds));
  }
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    add(out, "process_max_fds",
        "Maximum number of open file descriptors (the soft limit, `ulimit -n`)",
        prom::MetricType::Gauge, static_cast<double>(lim.rlim_cur));
  }
  return out;
}

} // namespace detail

} // namespace troupe::services
