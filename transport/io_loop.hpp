#pragma once

// The loop an io thread runs: `io_context::run`, with bounded busy polling. When the thread runs
// out of ready work it keeps polling the reactor (a non-blocking `epoll_wait`) for up to a
// budget before it blocks in the kernel. A thread that blocks leaves its CPU idle, and waking an
// idle CPU is slow: inside a virtual machine a halted vCPU is woken through the host, which on
// the machines of docs/performance.md costs more than the gateway's own work on a request.
// HAProxy's `busy-polling` does the same for the same reason, spinning always; this spins only for
// a budget after the last event, and not at all while other threads wait for a CPU (the spin would
// take theirs), nor, by default, under a CPU quota (it would burn quota).

#include "transport/io_loop_stats.hpp"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::transport {

/// Whether another thread waits for a CPU that a spinning thread would take, asked at most once
/// per `interval`.
///
/// A thread that may run on every online CPU reads the number of runnable threads in
/// `/proc/loadavg` (a `pread` of ~60 bytes) and compares it with the machine's CPUs: the count
/// includes the asking thread, so more runnable threads than CPUs means someone waits.
///
/// A thread pinned to some of the CPUs (taskset, a container's exclusive cpuset) cannot tell
/// its CPUs' share of that machine-wide count: threads waiting for the other CPUs would stop
/// its polling while its own are free (issue 11's bench, the gateway on CPU 0 and its load on
/// CPU 1: vetoed ten times as often once a fleet churn ran on CPU 1, and c=1's p99 doubled).
/// It asks instead whether another thread took its CPU since it last asked: its own
/// involuntary context switches (`getrusage(RUSAGE_THREAD)`), which grow exactly when the
/// scheduler gives its CPU to a thread that wanted it. A preemption vetoes the one spin it is
/// found at: the kernel's softirq threads preempt it briefly and often at thousands of
/// sockets, and a thread that competes for long preempts it again.
class cpu_contention {
public:
  /// The check for the calling thread: the pinned one when its affinity mask leaves out some
  /// online CPU (read once, here), else the machine-wide one.
  explicit cpu_contention(std::chrono::microseconds interval = std::chrono::milliseconds(1));
  /// Reads `loadavg_path` instead, for a machine of `cpus` CPUs (tests). With `preemptions`
  /// (the thread's involuntary context switches; nullopt: unknown), the pinned check.
  cpu_contention(std::chrono::microseconds interval, const std::string& loadavg_path, unsigned cpus,
                 std::function<std::optional<long>()> preemptions = {});
  ~cpu_contention();
  cpu_contention(const cpu_contention&) = delete;
  cpu_contention& operator=(const cpu_contention&) = delete;

  /// True when spinning now would take a CPU another runnable thread wants, or when the
  /// machine's state cannot be read (no spinning without knowing).
  bool others_waiting();

  /// True when this is the pinned thread's check (its preemptions, not the machine's count).
  bool pinned() const noexcept { return static_cast<bool>(preemptions_); }

private:
  int fd_ = -1;
  unsigned cpus_ = 1;
  std::chrono::microseconds interval_;
  std::chrono::steady_clock::time_point checked_{};
  bool waiting_ = true;
  std::function<std::optional<long>()> preemptions_;
  long last_preemptions_ = -1; ///< At the last question; -1 before the first.
};

/// How an io loop polls before it blocks.
struct busy_poll_options {
  /// Longest poll without work before blocking; 0: block at once (plain `io_context::run`).
  /// With `adaptive`, the most a poll may last.
  std::chrono::microseconds budget{0};
  /// Asked before each spin: true blocks at once. Empty: `cpu_contention` (the default).
  std::function<bool()> others_waiting;
  /// Handlers run before the writes they deferred are sent, at most (`send_phase.hpp`); they
  /// are sent sooner when no handler is ready. 0: writes are not deferred. Only for a loop
  /// that is the only one on its `io_context` (a deferred write runs on its thread).
  std::size_t send_batch = 0;
  /// Handlers a pass runs before its writes are deferred; a pass that ran this many leaves the
  /// next one deferring from its start. A lone request is answered at once: at c=1 a send put
  /// off by a few microseconds met its peer's vCPU asleep (+19 µs p50 on the 12-05 VM). 0:
  /// every write is deferred (tests).
  std::size_t busy_pass = 4;
  /// Each loop adapts its poll between 0 and `budget` to the idle spells it sees
  /// (`poll_window`), from `adaptive_start`; otherwise every poll may last `budget`.
  bool adaptive = false;
  /// The first window of an adaptive loop.
  std::chrono::microseconds adaptive_start{50};
};

/// Runs `ioc` on the calling thread until it is stopped or runs out of work, as
/// `io_context::run` does, polling for up to `opts.budget` whenever no handler is ready before
/// blocking. Several threads may run it on one `io_context`, counting into one `stats`.
void run_io_loop(boost::asio::io_context& ioc, const busy_poll_options& opts, io_loop_stats& stats);

/// How many CPUs the calling thread may run on (its affinity mask), or nullopt when unknown.
std::optional<unsigned> allowed_cpus();

/// The calling thread's involuntary context switches so far (`getrusage(RUSAGE_THREAD)`), or
/// nullopt when unknown.
std::optional<long> own_preemptions();

/// The runnable-thread count of a `/proc/loadavg` line (its fourth field's numerator), or
/// nullopt when the line has no such field.
std::optional<unsigned> runnable_threads(std::string_view loadavg);

/// The CPU quota of a cgroup v2 `cpu.max` line (`QUOTA PERIOD`, or `max PERIOD` for none) in
/// CPUs, or nullopt when there is no quota (or the line is not one).
std::optional<double> cpu_quota(std::string_view cpu_max);

/// The CPU quota of this process's cgroup (`/sys/fs/cgroup/cpu.max`), if it has one.
std::optional<double> own_cpu_quota();

/// Whether the kernel polls an idle CPU before halting it, given the cpuidle driver's name
/// (`/sys/devices/system/cpu/cpuidle/current_driver`) and the `haltpoll` driver's
/// `guest_halt_poll_ns`: a KVM guest's `cpuidle-haltpoll` with a non-zero poll does, for every
/// process, what busy polling does for the io threads.
bool kernel_halt_polls(std::string_view cpuidle_driver, std::string_view guest_halt_poll_ns);

/// `kernel_halt_polls` of this machine.
bool own_kernel_halt_polls();

} // namespace troupe::transport
