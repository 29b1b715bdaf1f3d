#pragma once

#include "apps/troupe-bench/bench_config.hpp"
#include "apps/troupe-bench/target.hpp"
#include "apps/troupe-bench/workload.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::bench {

/// Counters every event loop updates and the progress line reads.
struct live_counters {
  std::atomic<std::size_t> sent{0};
  std::atomic<std::size_t> done{0};
  std::atomic<std::size_t> failed{0};
  std::atomic<long> output_tokens{0};
};

/// What the event loops of a run share: the targets, the prompt source, the round-robin
/// cursor, the request budget of the stage and the live counters. Thread-safe.
class run_context {
public:
  run_context(const bench_config& cfg, std::vector<target> targets,
              std::unique_ptr<workload> source, std::string model);

  /// One request to send: where, and its bytes.
  struct next_request {
    std::size_t target = 0;
    std::shared_ptr<const std::string> bytes;
  };

  /// The next prompt, serialized for the next target in round-robin order.
  next_request next();

  /// Takes one request of the stage's `--requests` budget; false when it is spent.
  bool claim();

  /// Starts a new stage: its budget is full again and the counters are zero.
  void begin_stage();

  /// Asks every loop to stop releasing requests (Ctrl-C).
  void request_stop() noexcept { stop_.store(true); }
  bool stopping() const noexcept { return stop_.load(std::memory_order_relaxed); }

  const bench_config& config() const noexcept { return cfg_; }
  const std::vector<target>& targets() const noexcept { return targets_; }
  const std::string& model() const noexcept { return opts_.model; }
  const workload& source() const noexcept { return *source_; }
  live_counters& counters() noexcept { return counters_; }

private:
  const bench_config& cfg_;
  std::vector<target> targets_;
  std::unique_ptr<workload> source_;
  body_options opts_;
  std::string common_headers_; ///< Header lines every request carries.
  std::mutex source_mutex_;
  /// Serialized requests of a replayed source, by slot × target (under the mutex).
  std::vector<std::shared_ptr<const std::string>> replay_;
  std::atomic<std::size_t> cursor_{0};
  std::atomic<std::size_t> claimed_{0};
  std::atomic<bool> stop_{false};
  live_counters counters_;

  std::shared_ptr<const std::string> serialize(const prompt& p, std::size_t target) const;
};

/// A whole HTTP/1.1 POST: request line, Host, `headers` (each line ending in CRLF),
/// Content-Length, then `body`.
std::string serialize_post(const target& t, std::string_view path, std::string_view headers,
                           std::string_view body);

} // namespace troupe::bench
