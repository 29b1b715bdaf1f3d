#pragma once

// One spdlog logger per component, named after it ("request", "proxy", "cluster", ...), made
// once at start-up by `configure`. A line about one request carries the request's id as a
// field: `request_id=<id>` in plain lines, a `request_id` member in JSON lines.
//
// spdlog 1.10 has no MDC: `request_log` sets the id in a thread-local for the one call that
// logs the line, and the formatters read it (`current_request_id`). That holds because the
// loggers are synchronous: a line is formatted on the thread that logs it.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <spdlog/logger.h>
#include <string>
#include <string_view>
#include <utility>

namespace troupe::logs {

/// The parts of a node that log; each has its own logger, named `name(c)`.
enum class component : std::uint8_t {
  gateway,   ///< "gateway": start-up, listeners, shutdown, security warnings.
  http,      ///< "http": the HTTP front (admission, admin endpoints).
  request,   ///< "request": request actors and their legs (one summary line per request).
  proxy,     ///< "proxy": worker proxies (health, breaker, model discovery).
  policy,    ///< "policy": routing policies.
  registry,  ///< "registry": registrations, removals, merged records.
  cluster,   ///< "cluster": membership, links, gossip.
  inspector, ///< "inspector": the actor inspector behind /admin.
};

/// Every component, in enum order.
std::span<const component> components() noexcept;

/// The name of `c`'s logger.
std::string_view name(component c) noexcept;

/// The logger of `c`: the one `configure` made, spdlog's default logger before (unit tests).
spdlog::logger& logger(component c) noexcept;

/// The id of the request the line being logged on this thread is about; empty when none.
std::string_view current_request_id() noexcept;

/// Logs lines about one request, each carrying its id as a field. Cheap to make: a pointer and
/// a view of the id, which must outlive it (make one per statement).
class request_log {
public:
  request_log(component c, std::string_view request_id) noexcept
      : logger_(&logger(c)), id_(request_id) {}

  /// True when a line at `level` would be written (to skip costly arguments).
  bool should_log(spdlog::level::level_enum level) const noexcept {
    return logger_->should_log(level);
  }

  /// A line at `level`.
  template <class... Ts>
  void log(spdlog::level::level_enum level, fmt::format_string<Ts...> f, Ts&&... xs) const {
    if (!logger_->should_log(level)) {
      return;
    }
    scope s{id_};
    logger_->log(level, f, std::forward<Ts>(xs)...);
  }

  /// A line at `level` whose text is already made (no formatting).
  void write(spdlog::level::level_enum level, std::string_view text) const {
    if (!logger_->should_log(level)) {
      return;
    }
    scope s{id_};
    logger_->log(level, spdlog::string_view_t(text.data(), text.size()));
  }

  /// A line at debug level.
  template <class... Ts> void debug(fmt::format_string<Ts...> f, Ts&&... xs) const {
    log(spdlog::level::debug, f, std::forward<Ts>(xs)...);
  }

  /// A line at info level.
  template <class... Ts> void info(fmt::format_string<Ts...> f, Ts&&... xs) const {
    log(spdlog::level::info, f, std::forward<Ts>(xs)...);
  }

  /// A line at warn level.
  template <class... Ts> void warn(fmt::format_string<Ts...> f, Ts&&... xs) const {
    log(spdlog::level::warn, f, std::forward<Ts>(xs)...);
  }

  /// A line at error level.
  template <class... Ts> void error(fmt::format_string<Ts...> f, Ts&&... xs) const {
    log(spdlog::level::err, f, std::forward<Ts>(xs)...);
  }

private:
  /// Makes `id` this thread's current request id while it lives.
  struct scope {
    explicit scope(std::string_view id) noexcept;
    ~scope();
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    std::string_view previous;
  };

  spdlog::logger* logger_;
  std::string_view id_;
};

// -- one accessor per component --

inline spdlog::logger& gateway() noexcept {
  return logger(component::gateway);
}
inline spdlog::logger& http() noexcept {
  return logger(component::http);
}
inline spdlog::logger& request() noexcept {
  return logger(component::request);
}
inline spdlog::logger& proxy() noexcept {
  return logger(component::proxy);
}
inline spdlog::logger& policy() noexcept {
  return logger(component::policy);
}
inline spdlog::logger& registry() noexcept {
  return logger(component::registry);
}
inline spdlog::logger& cluster() noexcept {
  return logger(component::cluster);
}
inline spdlog::logger& inspector() noexcept {
  return logger(component::inspector);
}

/// Lines of the request actor about request `id`.
inline request_log request(std::string_view id) noexcept {
  return {component::request, id};
}

/// Lines of the HTTP front about request `id` (refused or answered before a request actor).
inline request_log http(std::string_view id) noexcept {
  return {component::http, id};
}

/// How long an info (or lower) line of the per-request components (`request`, `http`) may wait
/// in the sink's buffer before it is written, so that a busy gateway does not pay a `write` per
/// request: their warn and above, and every other component's info and above, flush the sink
/// with their line (and so everything buffered before it). A crash (not a normal exit) loses
/// at most the per-request lines of this last interval.
inline constexpr std::chrono::seconds flush_interval{1};

/// Makes every component's logger, writing to `sink` at `level` (trace..off): plain lines
/// (`<time> <level> [<component>] request_id=<id> <message>`, the id when there is one) or
/// JSON lines (`json_log_formatter`). The gateway's logger becomes spdlog's default. Which
/// lines flush the sink: see `flush_interval`; the others wait for `flush()`.
/// Call it once, before any actor runs.
void configure(spdlog::sink_ptr sink, const std::string& level, bool json);

/// `configure` with a buffered sink on stdout (a 64 KiB buffer unless stdout is a terminal),
/// flushed every `flush_interval` by spdlog's flusher thread and by `flush()`.
void configure(const std::string& level, bool json);

/// Writes out every line still buffered (call it before a normal exit).
void flush();

/// Appends `s` to `out` with one `memcpy`: fmt's own `append` copies through an out-of-line
/// loop (~60 instructions a piece), and a request's log line is made of ~25 pieces.
template <std::size_t N>
inline void put(fmt::basic_memory_buffer<char, N>& out, std::string_view s) {
  if (s.empty()) {
    return;
  }
  auto n = out.size();
  out.resize(n + s.size());
  std::memcpy(out.data() + n, s.data(), s.size());
}

/// The plain line pattern, `%*` being the request id field (`request_id=<id> ` or nothing).
inline constexpr std::string_view plain_pattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %*%v";

/// Appends the plain text field of `id` to `out`: `request_id=<id> `, the id quoted (with `\"`,
/// `\\` and `\xNN` escapes) when it holds a space, a quote, a backslash or a control character.
void append_request_id_field(std::string_view id, spdlog::memory_buf_t& out);

} // namespace troupe::logs
