#include "services/logs.hpp"
#include "services/plain_log_formatter.hpp"

#include <catch2/catch.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <string>
#include <vector>

using namespace troupe;
using json = nlohmann::json;

namespace {

/// Keeps every line its loggers write, formatted.
class line_sink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  std::vector<std::string> lines;
  int flushes = 0;

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t out;
    formatter_->format(msg, out);
    lines.emplace_back(out.data(), out.size());
  }
  void flush_() override { ++flushes; }
};

struct logs_fixture {
  std::shared_ptr<line_sink> sink = std::make_shared<line_sink>();

  ~logs_fixture() {
    logs::configure(std::make_shared<spdlog::sinks::null_sink_mt>(), "off", false);
  }

  /// The text after the time stamp of plain line `i`, without its end of line.
  std::string plain(std::size_t i) const {
    auto& l = sink->lines.at(i);
    auto text = l.substr(l.find(' ') + 1);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
      text.pop_back();
    }
    return text;
  }

  json record(std::size_t i) const { return json::parse(sink->lines.at(i)); }
};

} // namespace

TEST_CASE("every component has its own logger, named after it") {
  std::set<std::string_view> names;
  for (auto c : logs::components()) {
    CHECK(names.insert(logs::name(c)).second);
  }
  for (auto want :
       {"gateway", "http", "request", "proxy", "policy", "registry", "cluster", "inspector"}) {
    CHECK(names.count(want) == 1);
  }
}

TEST_CASE_METHOD(logs_fixture,
                 "plain lines name their component; a line about a request carries its "
                 "id as a field") {
  logs::configure(sink, "info", false);
  logs::request("a37a1831").info("POST /v1/completions model={} status={}", "m", 200);
  logs::proxy().info("worker {} is now healthy", "w-1");
  logs::http("rid-2").warn("client left while queued for admission");
  REQUIRE(sink->lines.size() == 3);
  CHECK(plain(0) == "info [request] request_id=a37a1831 POST /v1/completions model=m status=200");
  CHECK(plain(1) == "info [proxy] worker w-1 is now healthy"); // the id does not stay behind
  CHECK(plain(2) == "warning [http] request_id=rid-2 client left while queued for admission");
  CHECK(&logs::logger(logs::component::gateway) == spdlog::default_logger_raw());
}

TEST_CASE_METHOD(logs_fixture, "a request id that could forge a field or a line is quoted") {
  logs::configure(sink, "info", false);
  logs::request("a b").info("x");
  logs::request("q\"uote\\d").info("x");
  logs::request("two\nlines").info("x");
  REQUIRE(sink->lines.size() == 3);
  CHECK(plain(0) == "info [request] request_id=\"a b\" x");
  CHECK(plain(1) == "info [request] request_id=\"q\\\"uote\\\\d\" x");
  CHECK(plain(2) == "info [request] request_id=\"two\\x0alines\" x");
}

TEST_CASE_METHOD(logs_fixture,
                 "JSON lines carry the request id as a member, the message untouched") {
  logs::configure(sink, "info", true);
  logs::request("rid-\"odd\"\\").info("[{}] status={}", "not an id", 404);
  logs::cluster().warn("member {} is down", "b");
  REQUIRE(sink->lines.size() == 2);
  auto r = record(0);
  CHECK(r["logger"] == "request");
  CHECK(r["level"] == "info");
  CHECK(r["request_id"] == "rid-\"odd\"\\");
  CHECK(r["message"] == "[not an id] status=404");
  auto c = record(1);
  CHECK(c["logger"] == "cluster");
  CHECK(c["level"] == "warning");
  CHECK_FALSE(c.contains("request_id"));
  CHECK(c["message"] == "member b is down");
}

TEST_CASE_METHOD(logs_fixture, "lines below the level are not written, for requests or not") {
  logs::configure(sink, "info", false);
  CHECK_FALSE(logs::request("r").should_log(spdlog::level::debug));
  logs::request("r").debug("hidden {}", 1);
  logs::registry().debug("hidden");
  logs::request("r").error("shown");
  REQUIRE(sink->lines.size() == 1);
  CHECK(plain(0) == "error [request] request_id=r shown");
}

TEST_CASE_METHOD(logs_fixture, "per-request info lines wait for the flusher; warnings and the rare "
                               "components' lines flush at once") {
  logs::configure(sink, "info", false);
  logs::request("r").info("POST /v1/chat/completions status=200");
  logs::http("r").info("answered before a request actor");
  CHECK(sink->flushes == 0);
  logs::request("r").warn("worker w-1 failed");
  CHECK(sink->flushes == 1);
  logs::gateway().info("troupe listening on http://127.0.0.1:1");
  logs::proxy().info("worker w-1 is now healthy");
  CHECK(sink->flushes == 3);
  logs::request("r").info("buffered again");
  logs::flush();
  CHECK(sink->flushes > 3);
  CHECK(sink->lines.size() == 6);
}

namespace {

/// `%*` of spdlog's pattern formatter, as the plain formatter's reference.
class request_id_flag final : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    if (auto id = logs::current_request_id(); !id.empty()) {
      logs::append_request_id_field(id, dest);
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<request_id_flag>();
  }
};

/// Keeps the lines of two formatters for every record it gets.
class twin_sink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  std::vector<std::pair<std::string, std::string>> lines;
  logs::plain_log_formatter plain;
  spdlog::pattern_formatter pattern;

  twin_sink() {
    pattern.add_flag<request_id_flag>('*').set_pattern(std::string(logs::plain_pattern));
  }

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t a, b;
    plain.format(msg, a);
    pattern.format(msg, b);
    lines.emplace_back(std::string(a.data(), a.size()), std::string(b.data(), b.size()));
  }
  void flush_() override {}
};

} // namespace

TEST_CASE_METHOD(logs_fixture, "the plain formatter writes the bytes of the plain pattern") {
  auto twin = std::make_shared<twin_sink>();
  logs::configure(twin, "trace", false);
  auto& sink = twin;
  for (auto level : {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                     spdlog::level::warn, spdlog::level::err, spdlog::level::critical}) {
    logs::gateway().log(level, "POST /v1/chat/completions status={}", 200); // no request id
    logs::request("rid \"odd\"").log(level, "with an id {}", 1);
  }
  spdlog::details::log_msg old{spdlog::source_loc{}, "gateway", spdlog::level::info, "then"};
  old.time = std::chrono::system_clock::time_point{std::chrono::milliseconds{1700000000007}};
  sink->log(old); // a time of its own: the cached second is made again, milliseconds padded
  sink->log(old);
  REQUIRE(sink->lines.size() == 14);
  for (auto& [plain, pattern] : sink->lines) {
    CHECK(plain == pattern);
  }
}
