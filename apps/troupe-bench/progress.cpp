#include "apps/troupe-bench/progress.hpp"

namespace troupe::bench {

progress_line::progress_line(FILE* out, bool enabled, bool terminal)
    : out_(out), enabled_(enabled), terminal_(terminal) {}

void progress_line::begin(const std::string& label, double duration_s, std::size_t requests) {
  label_ = label;
  duration_s_ = duration_s;
  requests_ = requests;
  last_s_ = 0;
  last_done_ = 0;
  last_tokens_ = 0;
}

void progress_line::tick(const live_counters& c, double elapsed_s) {
  if (enabled_) {
    print(c, elapsed_s, false);
  }
}

void progress_line::end(const live_counters& c, double elapsed_s) {
  if (enabled_) {
    print(c, elapsed_s, true);
  }
}

void progress_line::print(const live_counters& c, double elapsed_s, bool final) {
  const auto sent = c.sent.load();
  const auto done = c.done.load();
  const auto failed = c.failed.load();
  const auto tokens = c.output_tokens.load();
  const double span = elapsed_s - last_s_;
  const double rps = span > 0 ? static_cast<double>(done - last_done_) / span : 0;
  const double tps = span > 0 ? static_cast<double>(tokens - last_tokens_) / span : 0;
  last_s_ = elapsed_s;
  last_done_ = done;
  last_tokens_ = tokens;
  std::string limit;
  if (duration_s_ > 0) {
    limit += "/" + std::to_string(static_cast<long>(duration_s_)) + " s";
  } else {
    limit += " s";
  }
  std::string of = requests_ ? "/" + std::to_string(requests_) : "";
  std::fprintf(out_,
               "%s[%s] %5.1f%s  sent %zu%s  done %zu  failed %zu  in flight %zu  %.1f req/s  "
               "%.0f tok/s%s",
               terminal_ ? "\r\033[K" : "", label_.c_str(), elapsed_s, limit.c_str(), sent,
               of.c_str(), done, failed, sent > done ? sent - done : 0, rps, tps,
               terminal_ && !final ? "" : "\n");
  std::fflush(out_);
}

} // namespace troupe::bench
