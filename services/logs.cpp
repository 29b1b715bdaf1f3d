#include "services/logs.hpp"

#include "services/json_log_formatter.hpp"
#include "services/plain_log_formatter.hpp"

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace troupe::logs {

namespace {

constexpr std::array all_components{
    component::gateway, component::http,     component::request, component::proxy,
    component::policy,  component::registry, component::cluster, component::inspector,
};

constexpr std::array<std::string_view, all_components.size()> names{
    "gateway", "http", "request", "proxy", "policy", "registry", "cluster", "inspector",
};

static_assert([] {
  for (std::size_t i = 0; i < all_components.size(); ++i) {
    if (static_cast<std::size_t>(all_components[i]) != i) {
      return false;
    }
  }
  return true;
}());

// Constant-initialized (null until `configure`); the loggers themselves live in spdlog's
// registry, which owns them until the process ends.
std::array<std::atomic<spdlog::logger*>, all_components.size()> loggers{};

thread_local std::string_view current_id;

/// Lines to stdout through its stdio buffer, written out by `flush` (spdlog's stdout sink
/// flushes every line: a `write` per request).
class buffered_stdout_sink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t out;
    formatter_->format(msg, out);
    // The sink's lock serializes writers already: no need for stdio's own.
    fwrite_unlocked(out.data(), 1, out.size(), stdout);
  }
  void flush_() override { std::fflush(stdout); }
};

/// The bytes a plain id field must quote: space and control characters, DEL, `"` and `\`.
constexpr std::array<bool, 256> quoted_bytes = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c <= ' '; ++c) {
    t[c] = true;
  }
  t[0x7f] = t['"'] = t['\\'] = true;
  return t;
}();

bool needs_quotes(std::string_view id) {
  bool any = false;
  for (char c : id) {
    any |= quoted_bytes[static_cast<unsigned char>(c)]; // no branch per byte
  }
  return any || id.empty();
}

} // namespace

std::span<const component> components() noexcept {
  return all_components;
}

std::string_view name(component c) noexcept {
  return names[static_cast<std::size_t>(c)];
}

spdlog::logger& logger(component c) noexcept {
  if (auto* l = loggers[static_cast<std::size_t>(c)].load(std::memory_order_acquire)) {
    return *l;
  }
  return *spdlog::default_logger_raw();
}

std::string_view current_request_id() noexcept {
  return current_id;
}

request_log::scope::scope(std::string_view id) noexcept : previous(current_id) {
  current_id = id;
}

request_log::scope::~scope() {
  current_id = previous;
}

void append_request_id_field(std::string_view id, spdlog::memory_buf_t& out) {
  put(out, "request_id=");
  if (!needs_quotes(id)) {
    put(out, id);
  } else {
    static constexpr char hex[] = "0123456789abcdef";
    out.push_back('"');
    for (char c : id) {
      auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(c);
      } else if (u < ' ' || u == 0x7f) {
        char esc[4] = {'\\', 'x', hex[u >> 4], hex[u & 0xf]};
        out.append(esc, esc + sizeof(esc));
      } else {
        out.push_back(c);
      }
    }
    out.push_back('"');
  }
  out.push_back(' ');
}

void configure(spdlog::sink_ptr sink, const std::string& level, bool json) {
  auto lvl = spdlog::level::from_str(level);
  for (auto c : all_components) {
    auto logger_name = std::string(name(c));
    auto l = std::make_shared<spdlog::logger>(logger_name, sink);
    if (json) {
      // A formatter, not a pattern: a pattern cannot escape the message.
      l->set_formatter(std::make_unique<json_log_formatter>());
    } else {
      l->set_formatter(std::make_unique<plain_log_formatter>()); // plain_pattern's bytes
    }
    l->set_level(lvl);
    // The components that log a line per request wait for the flusher below warn; the rest
    // log rarely (start-up, health, membership), and a reader should see those lines at once.
    bool per_request = c == component::request || c == component::http;
    l->flush_on(per_request ? spdlog::level::warn : spdlog::level::info);
    spdlog::drop(logger_name);
    spdlog::register_logger(l);
    loggers[static_cast<std::size_t>(c)].store(l.get(), std::memory_order_release);
    if (c == component::gateway) {
      spdlog::set_default_logger(l);
    }
  }
}

void configure(const std::string& level, bool json) {
  if (!isatty(fileno(stdout))) {
    // Fully buffered: a `write` per 64 KiB (or per flush), not per line. Set before the first
    // output, as setvbuf requires.
    static char buffer[64 * 1024];
    std::setvbuf(stdout, buffer, _IOFBF, sizeof(buffer));
  }
  configure(std::make_shared<buffered_stdout_sink>(), level, json);
  spdlog::flush_every(flush_interval);
}

void flush() {
  for (auto& l : loggers) {
    if (auto* p = l.load(std::memory_order_acquire)) {
      p->flush();
    }
  }
}

} // namespace troupe::logs
