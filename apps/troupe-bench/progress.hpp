#pragma once

#include "apps/troupe-bench/run_context.hpp"

#include <cstdio>
#include <string>

namespace troupe::bench {

/// The progress line of a running stage on stderr: elapsed time, requests sent, done, failed
/// and in flight, and the rates over the last interval. On a terminal one line is rewritten
/// in place every second; otherwise a line is printed every ten seconds.
class progress_line {
public:
  progress_line(FILE* out, bool enabled, bool terminal);

  /// A stage starts.
  void begin(const std::string& label, double duration_s, std::size_t requests);

  /// Prints the line if it is due; `elapsed_s` since the stage's start.
  void tick(const live_counters& c, double elapsed_s);

  /// The stage ended: the last line is completed.
  void end(const live_counters& c, double elapsed_s);

  /// Seconds between two looks at the counters.
  double interval_s() const noexcept { return terminal_ ? 1.0 : 10.0; }

private:
  void print(const live_counters& c, double elapsed_s, bool final);

  FILE* out_;
  bool enabled_;
  bool terminal_;
  std::string label_;
  double duration_s_ = 0;
  std::size_t requests_ = 0;
  double last_s_ = 0;
  std::size_t last_done_ = 0;
  long last_tokens_ = 0;
};

} // namespace troupe::bench
