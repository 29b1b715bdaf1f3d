#include "apps/troupe-bench/report.hpp"

#include <cstdio>

namespace troupe::bench {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string percent(double share) {
  return share < 0 ? std::string("n/a") : fixed(share * 100.0, 1) + "%";
}

std::string pad(const std::string& s, std::size_t width, bool right = true) {
  if (s.size() >= width) {
    return s;
  }
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string ms_or_dash(const summary& s, double v) {
  return s.count ? fixed(v, 2) : std::string("-");
}

void latency_row(std::ostream& out, const char* name, const summary& s) {
  out << "  " << pad(name, 6, false);
  if (s.count == 0) {
    out << pad("-", 10) << "\n";
    return;
  }
  for (double v : {s.mean, s.p50, s.p90, s.p99, s.max}) {
    out << pad(fixed(v, 3), 10);
  }
  out << pad(std::to_string(s.count), 10) << "\n";
}

} // namespace

void print_header(std::ostream& out, const run_info& info) {
  out << "troupe-bench: " << info.api << (info.stream ? " streamed" : " not streamed") << ", model "
      << info.model << ", max tokens " << info.max_tokens << ", " << info.arrival << ", "
      << info.threads << (info.threads == 1 ? " thread" : " threads") << "\n"
      << "  workload: " << info.workload << "\n  urls:";
  for (const auto& u : info.urls) {
    out << " " << u;
  }
  out << "\n";
}

void print_stage(std::ostream& out, const stage_summary& s) {
  out << "\n== " << s.spec.label() << ": " << s.requests << " requests in "
      << fixed(s.duration_s, 2) << " s (" << s.ok << " ok, " << s.failed << " failed";
  if (s.warmup) {
    out << ", " << s.warmup << " in warm-up not counted";
  }
  out << ")\n  throughput: " << fixed(s.request_rate, 2) << " req/s, " << fixed(s.output_rate, 1)
      << " output tok/s";
  if (s.prompt_tokens >= 0) {
    out << ", " << fixed(s.input_rate, 1) << " prompt tok/s";
  }
  out << "; prefix cache hits " << percent(s.cache_hit_rate) << "\n";
  if (!s.failures.empty()) {
    out << "  failures:";
    for (const auto& [k, v] : s.failures) {
      out << " " << k << "=" << v;
    }
    out << "\n";
    for (const auto& e : s.first_errors) {
      out << "    " << e << "\n";
    }
  }
  out << "  " << pad("ms", 6, false);
  for (const char* h : {"mean", "p50", "p90", "p99", "max", "count"}) {
    out << pad(h, 10);
  }
  out << "\n";
  latency_row(out, "ttft", s.ttft);
  latency_row(out, "itl", s.itl);
  latency_row(out, "tpot", s.tpot);
  latency_row(out, "e2e", s.e2e);
  latency_row(out, "wait", s.wait);
  if (s.targets.size() > 1) {
    for (const auto& t : s.targets) {
      const double hit =
          t.prompt_tokens > 0 && s.cached_tokens >= 0
              ? static_cast<double>(t.cached_tokens) / static_cast<double>(t.prompt_tokens)
              : -1;
      out << "  " << t.url << ": " << t.requests << " requests, " << t.ok << " ok, cache hits "
          << percent(hit);
      if (t.ttft.count > 0) {
        out << ", ttft p50 " << fixed(t.ttft.p50, 2) << " p99 " << fixed(t.ttft.p99, 2) << " ms";
      }
      if (t.e2e.count > 0) {
        out << ", e2e p50 " << fixed(t.e2e.p50, 2) << " p99 " << fixed(t.e2e.p99, 2) << " ms";
      }
      out << "\n";
    }
  }
}

void print_overview(std::ostream& out, const std::vector<stage_summary>& stages) {
  out << "\n" << pad("stage", 20, false);
  for (const char* h : {"req/s", "tok/s", "ttft p50", "ttft p99", "itl p50", "e2e p50", "e2e p99",
                        "failed", "cache"}) {
    out << pad(h, 10);
  }
  out << "\n";
  for (const auto& s : stages) {
    out << pad(s.spec.label(), 20, false) << pad(fixed(s.request_rate, 1), 10)
        << pad(fixed(s.output_rate, 0), 10) << pad(ms_or_dash(s.ttft, s.ttft.p50), 10)
        << pad(ms_or_dash(s.ttft, s.ttft.p99), 10) << pad(ms_or_dash(s.itl, s.itl.p50), 10)
        << pad(ms_or_dash(s.e2e, s.e2e.p50), 10) << pad(ms_or_dash(s.e2e, s.e2e.p99), 10)
        << pad(std::to_string(s.failed), 10) << pad(percent(s.cache_hit_rate), 10) << "\n";
  }
}

nlohmann::json to_json(const summary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"min", s.min}, {"p50", s.p50},
          {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

nlohmann::json to_json(const stage_summary& s) {
  nlohmann::json j = {
      {"stage", s.spec.label()},
      {"duration_s", s.duration_s},
      {"requests", s.requests},
      {"ok", s.ok},
      {"failed", s.failed},
      {"warmup_requests", s.warmup},
      {"failures", s.failures},
      {"first_errors", s.first_errors},
      {"throughput",
       {{"requests_per_s", s.request_rate},
        {"output_tokens_per_s", s.output_rate},
        {"prompt_tokens_per_s", s.input_rate}}},
      {"tokens",
       {{"output", s.output_tokens}, {"prompt", s.prompt_tokens}, {"cached", s.cached_tokens}}},
      {"cache_hit_rate",
       s.cache_hit_rate < 0 ? nlohmann::json() : nlohmann::json(s.cache_hit_rate)},
      {"ttft_ms", to_json(s.ttft)},
      {"itl_ms", to_json(s.itl)},
      {"tpot_ms", to_json(s.tpot)},
      {"e2e_ms", to_json(s.e2e)},
      {"wait_ms", to_json(s.wait)},
  };
  if (s.spec.open_loop) {
    j["rate"] = s.spec.rate;
  } else {
    j["concurrency"] = s.spec.concurrency;
  }
  auto targets = nlohmann::json::array();
  for (const auto& t : s.targets) {
    targets.push_back({{"url", t.url},
                       {"requests", t.requests},
                       {"ok", t.ok},
                       {"prompt_tokens", t.prompt_tokens},
                       {"cached_tokens", t.cached_tokens},
                       {"ttft_ms", to_json(t.ttft)},
                       {"e2e_ms", to_json(t.e2e)}});
  }
  j["targets"] = std::move(targets);
  return j;
}

nlohmann::json to_json(const run_info& info, const std::vector<stage_summary>& stages) {
  nlohmann::json run = {{"api", info.api},
                        {"stream", info.stream},
                        {"model", info.model},
                        {"urls", info.urls},
                        {"workload", info.workload},
                        {"arrival", info.arrival},
                        {"max_tokens", info.max_tokens},
                        {"threads", info.threads}};
  auto list = nlohmann::json::array();
  for (const auto& s : stages) {
    list.push_back(to_json(s));
  }
  return {{"run", std::move(run)}, {"stages", std::move(list)}};
}

} // namespace troupe::bench
