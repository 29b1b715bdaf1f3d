#include "transport/io_loop.hpp"

#include "protocol/parse_number.hpp"
#include "transport/poll_window.hpp"
#include "transport/send_phase.hpp"
#include "transport/small_file.hpp"

#include <algorithm>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

namespace troupe::transport {

namespace {

using clock = std::chrono::steady_clock;

/// The machine's online CPUs, at least 1: what `/proc/loadavg`'s runnable count is shared by.
unsigned online_cpus() {
  return static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

using protocol::next_field;

} // namespace

// -- cpu_contention --

namespace {

/// The pinned check's reading for the calling thread, or none when it may use every CPU.
std::function<std::optional<long>()> preemptions_if_pinned() {
  auto allowed = allowed_cpus();
  if (allowed && *allowed < online_cpus()) {
    return own_preemptions;
  }
  return {};
}

} // namespace

cpu_contention::cpu_contention(std::chrono::microseconds interval)
    : cpu_contention(interval, "/proc/loadavg", online_cpus(), preemptions_if_pinned()) {}

cpu_contention::cpu_contention(std::chrono::microseconds interval, const std::string& loadavg_path,
                               unsigned cpus, std::function<std::optional<long>()> preemptions)
    : fd_(preemptions ? -1 : ::open(loadavg_path.c_str(), O_RDONLY | O_CLOEXEC)),
      cpus_(std::max(1u, cpus)), interval_(interval),
      checked_(clock::now() - interval - std::chrono::seconds(1)),
      preemptions_(std::move(preemptions)) {}

cpu_contention::~cpu_contention() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool cpu_contention::others_waiting() {
  auto now = clock::now();
  if (now - checked_ < interval_) {
    // A pinned thread's preemption vetoes the one spin it was found at; unknown vetoes all.
    return preemptions_ ? last_preemptions_ < 0 : waiting_;
  }
  checked_ = now;
  if (preemptions_) {
    // Another thread took this one's CPU since the last question: it wants the CPU, so this
    // spin is skipped. One spin, not the interval: the kernel's own threads (softirq work on
    // this CPU's sockets, ~65 times a second at 4,000 upstream connections) preempt a thread
    // that never competes for long, and each vetoed spin costs the next event a wake-up. The
    // first reading only sets the mark; an unknown one allows no spinning.
    auto n = preemptions_();
    waiting_ = !n || (last_preemptions_ >= 0 && *n > last_preemptions_);
    last_preemptions_ = n ? *n : -1;
    return waiting_;
  }
  waiting_ = true;
  char buf[128];
  auto n = fd_ < 0 ? -1 : ::pread(fd_, buf, sizeof(buf), 0);
  if (n > 0) {
    if (auto running = runnable_threads({buf, static_cast<std::size_t>(n)})) {
      // The count includes this thread (it is running): the others fit on the other CPUs.
      waiting_ = *running > cpus_;
    }
  }
  return waiting_;
}

// -- the loop --

namespace {

/// Runs the handlers ready now, as `poll` does. With deferred sends, once the pass has run
/// `busy_pass` handlers the writes wait, and go out every `batch` handlers and when none is
/// left ready. The number of handlers run.
std::size_t run_ready(boost::asio::io_context& ioc, const send_phase::scope& sends,
                      std::size_t busy_pass, io_loop_stats& stats) {
  if (!sends) {
    return ioc.poll();
  }
  auto flush = [&stats] {
    if (auto sent = send_phase::flush()) {
      stats.sends_deferred.fetch_add(sent, std::memory_order_relaxed);
      stats.send_flushes.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::size_t ran = 0;
  std::size_t since_flush = 0;
  while (ioc.poll_one() > 0) {
    if (++ran == busy_pass) {
      sends.defer_writes(true);
    }
    if (++since_flush >= sends.batch()) {
      flush();
      since_flush = 0;
    }
  }
  flush();
  sends.defer_writes(ran >= busy_pass); // the next pass's first handler, at its start
  return ran;
}

/// Runs ready handlers one at a time for up to `budget`, or until one ran: true if one did.
bool poll_for(boost::asio::io_context& ioc, std::chrono::microseconds budget) {
  for (auto until = clock::now() + budget; clock::now() < until && !ioc.stopped();) {
    if (ioc.poll_one() > 0) {
      return true;
    }
  }
  return false;
}

} // namespace

void run_io_loop(boost::asio::io_context& ioc, const busy_poll_options& opts,
                 io_loop_stats& stats) {
  // Every path below runs `run_ready` before it blocks: no deferred send waits for an event.
  send_phase::scope sends{opts.send_batch};
  sends.defer_writes(opts.busy_pass == 0);
  if (opts.budget.count() <= 0) {
    if (!sends) {
      ioc.run();
      return;
    }
    while (!ioc.stopped() && ioc.run_one() > 0) {
      run_ready(ioc, sends, opts.busy_pass, stats);
    }
    return;
  }
  std::optional<cpu_contention> contention;
  auto others_waiting = opts.others_waiting;
  if (!others_waiting) {
    contention.emplace();
    others_waiting = [&contention] { return contention->others_waiting(); };
  }
  constexpr auto relaxed = std::memory_order_relaxed;
  poll_window window{opts.budget, opts.adaptive ? opts.adaptive_start : opts.budget};
  stats.window_us.store(window.current().count(), relaxed);
  // Work came `idle` after the loop ran out of it, past the poll: the window learns from it.
  // (Measured to the end of the first handler run after the sleep: asio does not say when it
  // woke, so a handler that runs long reads as a longer gap, erring towards less polling.)
  auto missed = [&](clock::duration idle) {
    if (opts.adaptive &&
        window.missed(std::chrono::duration_cast<std::chrono::microseconds>(idle))) {
      stats.window_us.store(window.current().count(), relaxed);
      stats.window_changes.fetch_add(1, relaxed);
    }
  };
  while (!ioc.stopped()) {
    if (run_ready(ioc, sends, opts.busy_pass, stats) > 0) {
      continue; // ran everything ready; look again
    }
    if (ioc.stopped()) {
      break; // out of work, or stopped
    }
    if (others_waiting()) {
      stats.vetoes.fetch_add(1, relaxed);
      ioc.run_one(); // sleep until the next event (a spell that says nothing of polling)
      continue;
    }
    auto start = clock::now();
    bool found = false;
    if (window.current().count() > 0) { // a closed window sleeps at once
      stats.spins.fetch_add(1, relaxed);
      found = poll_for(ioc, window.current());
      stats.spin_ns.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count(),
          relaxed);
    }
    if (found) {
      stats.hits.fetch_add(1, relaxed);
    } else {
      ioc.run_one(); // nothing came in time: sleep until the next event
      missed(clock::now() - start);
    }
  }
}

// -- parsing --

std::optional<unsigned> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
    return std::nullopt;
  }
  return static_cast<unsigned>(CPU_COUNT(&set));
}

std::optional<long> own_preemptions() {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) {
    return std::nullopt;
  }
  return usage.ru_nivcsw;
}

std::optional<unsigned> runnable_threads(std::string_view loadavg) {
  // "0.52 0.61 0.70 3/412 12345": the fourth field is running/total.
  for (int i = 0; i < 3; ++i) {
    if (next_field(loadavg).empty()) {
      return std::nullopt;
    }
  }
  auto field = next_field(loadavg);
  auto slash = field.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  return protocol::parse_number<unsigned>(field.substr(0, slash));
}

std::optional<double> cpu_quota(std::string_view cpu_max) {
  auto quota = next_field(cpu_max);
  auto period = protocol::parse_number<double>(next_field(cpu_max));
  if (quota == "max" || !period || *period <= 0) {
    return std::nullopt;
  }
  auto q = protocol::parse_number<double>(quota);
  if (!q || *q <= 0) {
    return std::nullopt;
  }
  return *q / *period;
}

std::optional<double> own_cpu_quota() {
  // cgroup v2 (the unified hierarchy as mounted for this process, e.g. in a container).
  if (auto v2 = read_small_file("/sys/fs/cgroup/cpu.max"); !v2.empty()) {
    return cpu_quota(v2);
  }
  // cgroup v1: the quota and the period in two files; a quota of -1 is none.
  auto quota = read_small_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  auto period = read_small_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (quota.empty() || period.empty()) {
    return std::nullopt;
  }
  return cpu_quota(quota + " " + period); // fields split at any whitespace, newlines too
}

bool kernel_halt_polls(std::string_view cpuidle_driver, std::string_view guest_halt_poll_ns) {
  auto driver = next_field(cpuidle_driver);
  auto ns = protocol::parse_number<unsigned long long>(next_field(guest_halt_poll_ns));
  return driver == "haltpoll" && ns && *ns > 0;
}

bool own_kernel_halt_polls() {
  return kernel_halt_polls(read_small_file("/sys/devices/system/cpu/cpuidle/current_driver"),
                           read_small_file("/sys/module/haltpoll/parameters/guest_halt_poll_ns"));
}

} // namespace troupe::transport
